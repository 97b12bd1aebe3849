package io.herald.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerSettings;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.testing.GatewayTest;
import io.herald.topic.TopicSettings;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The ledger's steps driven one by one, to pin down an order that concurrency makes rare. */
@Timeout(30)
class LedgerIT extends GatewayTest {
  private Vertx vertx;
  private RedisStore store;
  private SpoolLedger ledger;

  @BeforeEach
  void open() {
    vertx = Vertx.vertx();
    store = RedisStore.pipelined(vertx, redis.url(), 5000);
    ledger = new SpoolLedger(vertx, new HeraldConfig.Quotas(null, Map.of(), 80, 60, 60_000, null), 5000, 1);
  }

  @AfterEach
  void close() {
    store.close().await();
    vertx.close().await();
  }

  private long charged(String topic) {
    Response usage = store.send(Request.cmd(Command.HGET)
        .arg(Keys.ledger(0, 1).get(0)).arg("t:" + topic)).await();
    return usage == null ? 0 : usage.toLong();
  }

  @Test
  @DisplayName("figures that include a hold's effect give the hold back: a publish is never counted twice, whichever comes first")
  void realizedHoldsAreNotCountedTwice() {
    String topic = unique("ledger");
    String name = consumer(new JsonObject(), topic);
    ConsumerSettings consumer = ConsumerSettings.parse(name, new JsonObject().put("topics", new JsonArray().add(topic)));
    TopicSettings metered = new TopicSettings(topic, null, 1_000_000L, true, null);

    // a publish round: room held for its 100-byte event, then the consumer's spool script realizes it
    List<SpoolLedger.Verdict> verdicts = ledger.reserve(store, "round1",
        List.of(new SpoolLedger.Group(metered, List.of(consumer), List.of(100)))).await();
    assertEquals(1, verdicts.size());
    assertEquals(100, charged(topic));
    String blob = "x".repeat(100);
    Response spooled = store.eval(Script.PUBLISH, Keys.spool(name),
        List.of("round1:" + name, 300_000, "", "018000000000-0000000000000001", blob, "", topic, "", "", "")).await();
    SpoolFigures fromSpool = SpoolFigures.parse(name, consumer, spooled, 5);
    assertEquals(List.of("round1:" + name), fromSpool.realized());

    // a sync of the same consumer lands before the round's own settle: still 100, not 200
    Response read = store.eval(Script.SPOOL_FIGURES, Keys.consumer(name), List.of()).await();
    ledger.settle(store, List.of(), List.of(SpoolFigures.parse(name, consumer, read, 0))).await();
    assertEquals(100, charged(topic));
    // then the round's settle: the hold is gone already, the figures are the same
    ledger.settle(store, List.of("round1:" + name), List.of(fromSpool)).await();
    assertEquals(100, charged(topic));
  }
}
