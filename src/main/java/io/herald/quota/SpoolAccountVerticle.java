package io.herald.quota;

import io.herald.consumer.ConsumerDirectory;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Keeps the spool ledger up to date. Every {@code quotas.syncMs} it sends the ledger the figures of
 * the consumers whose spool this node's scripts changed, then raises or clears the alerts from the
 * new sums; now and then it sends those of every consumer, in case a node died before sending its
 * own, and brings the bank and the shards of a sharded ledger to the same word.
 */
public final class SpoolAccountVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(SpoolAccountVerticle.class.getName());
  /** Every consumer's figures are sent this often (by every node: harmless, a figure is a figure). */
  private static final long FULL_SYNC_MS = 60_000;
  /** Consumers whose figures go in one settle call. */
  private static final int SYNC_BATCH = 200;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final SpoolLedger ledger;
  private RedisStore store;
  private boolean syncing;

  public SpoolAccountVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory, SpoolLedger ledger) {
    this.stores = stores;
    this.directory = directory;
    this.ledger = ledger;
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    vertx.setPeriodic(ledger.quotas().syncMs(), t -> syncTouched().onComplete(done -> checkAlerts()));
    // at once (a ledger that is new, or behind after a node died), then now and then
    syncAll();
    vertx.setPeriodic(FULL_SYNC_MS, t -> syncAll());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    // a node stops whatever Redis answers: figures left unsent reach the ledger by another node's
    // full sync within a minute, and until then the ledger errs on the full side
    return syncTouched()
        .recover(failure -> {
          LOG.log(System.Logger.Level.INFO, "Spool figures left unsent at stop: " + failure.getMessage());
          return Future.succeededFuture();
        })
        .eventually(store::close);
  }

  /** Sends the figures of the consumers this node's scripts changed since the last time. */
  Future<Void> syncTouched() {
    if (syncing) {
      return Future.succeededFuture();
    }
    List<String> touched = ledger.drainTouched();
    if (touched.isEmpty()) {
      return Future.succeededFuture();
    }
    syncing = true;
    return sync(touched)
        .onFailure(failure -> touched.forEach(ledger::touched)) // next time, then
        .eventually(() -> {
          syncing = false;
          return Future.succeededFuture();
        });
  }

  private void checkAlerts() {
    ledger.checkAlerts(store).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG,
        "Could not check the spool alerts: " + failure.getMessage()));
  }

  /**
   * Sends every consumer's figures (those this node knows, and those the ledger holds), and
   * reconciles the bank with the shards.
   */
  private void syncAll() {
    List<Future<Response>> reads = new ArrayList<>();
    for (int shard = 0; shard < ledger.shards(); shard++) {
      reads.add(store.send(Request.cmd(Command.HKEYS).arg(ledger.keys(shard).get(1))));
    }
    Future.all(reads).compose(shards -> {
      Set<String> all = new LinkedHashSet<>(directory.all().keySet());
      shards.<Response>list().forEach(names -> names.forEach(name -> all.add(name.toString())));
      return sync(all);
    }).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Full spool sync failed: " + failure.getMessage()));
    ledger.reconcile(store).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG,
        "Could not reconcile the ledger's bank: " + failure.getMessage()));
  }

  private Future<Void> sync(Collection<String> consumers) {
    List<String> names = new ArrayList<>(consumers);
    Future<Void> chain = Future.succeededFuture();
    for (int from = 0; from < names.size(); from += SYNC_BATCH) {
      List<String> batch = names.subList(from, Math.min(names.size(), from + SYNC_BATCH));
      chain = chain.compose(ok -> Future.all(batch.stream().map(this::figures).toList())
          .compose(all -> ledger.settle(store, List.of(), all.<SpoolFigures>list())));
    }
    return chain;
  }

  private Future<SpoolFigures> figures(String consumer) {
    return store.eval(Script.SPOOL_FIGURES, Keys.consumer(consumer), List.of()).map(reply -> {
      if (reply.type() != ResponseType.MULTI) {
        return SpoolFigures.gone(consumer);
      }
      return SpoolFigures.parse(consumer, directory.get(consumer), reply, 0);
    });
  }
}
