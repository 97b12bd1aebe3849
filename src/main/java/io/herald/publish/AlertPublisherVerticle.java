package io.herald.publish;

import io.herald.Addresses;
import io.herald.consumer.ConsumerDirectory;
import io.herald.copy.Copies;
import io.herald.lifecycle.Drain;
import io.herald.metrics.HeraldMetrics;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.RedisClock;
import io.herald.store.RedisStore;
import io.herald.topic.TopicDirectory;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;
import java.util.function.Supplier;

/**
 * Publishes the gateway's own alerts ({@link Addresses#ALERTS}: {@code {"topic", "payload"}}, sent
 * by the spool ledger when use crosses a threshold) on their {@code $sys/alerts/...} topic, like any
 * event but never refused by a quota: an alert that the spool is full must get through.
 */
public final class AlertPublisherVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(AlertPublisherVerticle.class.getName());
  /** Alerts carry no idempotency key: the window their publisher is given is never used. */
  private static final long ALERT_DEDUP_MS = 1000;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final TopicDirectory topics;
  private final SpoolLedger ledger;
  private final RedisClock clock;
  /** The publisher's meters (its system publishes are not counted as clients' ones). */
  private final HeraldMetrics metrics;
  private final Copies copies;
  private RedisStore store;
  private MessageConsumer<JsonObject> alerts;

  public AlertPublisherVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory, TopicDirectory topics,
      SpoolLedger ledger, RedisClock clock, HeraldMetrics metrics, Copies copies) {
    this.stores = stores;
    this.copies = copies;
    this.metrics = metrics;
    this.clock = clock;
    this.directory = directory;
    this.topics = topics;
    this.ledger = ledger;
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    // alerts are small: the gateway's event size limit never refuses them
    PublishService publisher = new PublishService(vertx, store, directory, topics, ledger,
        new HoldSettler(vertx, store, ledger), Long.MAX_VALUE, new DueTimes(vertx, store), ALERT_DEDUP_MS, new EventIds(clock),
        new Drain(), metrics, copies); // alerts are the gateway's own publishes: never refused, never waited for
    alerts = vertx.eventBus().localConsumer(Addresses.ALERTS, message -> {
      JsonObject alert = message.body();
      publisher.publishSystem(alert.getString("topic"), alert.getJsonObject("payload"))
          .onFailure(failure -> LOG.log(System.Logger.Level.WARNING, "Could not publish an alert on "
              + alert.getString("topic") + ": " + failure.getMessage()));
    });
    return alerts.completion();
  }

  @Override
  public Future<?> stop() {
    return alerts.unregister().eventually(store::close);
  }
}
