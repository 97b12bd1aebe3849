package io.herald.deadletter;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class TimeToLiveIT extends GatewayTest {

  /** "payload:deadLetterReason" of each event in the consumer's dead-letter queue. */
  private static List<String> deadLetterReasons(String consumer) {
    Reply dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject().put("maxEvents", 10));
    return dead.events().stream()
        .map(e -> ((JsonObject) e).getValue("payload") + ":" + ((JsonObject) e).getString("deadLetterReason")).toList();
  }

  @Test
  @DisplayName("an event's ttlMs and the consumer's maxTtlMs: the smaller wins; an event not acked in time is dead-lettered with TTL_EXPIRED")
  void ttlExpires() {
    String topic = unique("ttl");
    String plain = consumer(new JsonObject(), topic);
    String capped = consumer(new JsonObject().put("maxTtlMs", 1000), topic);
    http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", "short").put("ttlMs", 1000))
        .add(new JsonObject().put("payload", "long").put("ttlMs", 3_600_000))
        .add(new JsonObject().put("payload", "none"))));
    // one handed out and not acked: its TTL ends while it is pending
    http().poll(plain, new JsonObject().put("maxEvents", 1));

    await().atMost(Duration.ofSeconds(10)).until(() -> deadLetterReasons(capped).size() == 3);
    assertEquals(List.of("short:TTL_EXPIRED", "long:TTL_EXPIRED", "none:TTL_EXPIRED"), deadLetterReasons(capped));
    await().atMost(Duration.ofSeconds(10)).until(() -> deadLetterReasons(plain).size() == 1);
    assertEquals(List.of("short:TTL_EXPIRED"), deadLetterReasons(plain));
    JsonObject metadata = http().metadata(plain).json();
    assertEquals(2, metadata.getLong("backlog"), "the others live on: " + metadata.encode());
    assertEquals(0, metadata.getLong("unacked"));
  }

  @Test
  @DisplayName("in ackMode auto an event handed out takes its time to live with it: only the event left unpolled is dead-lettered")
  void autoAckedEventLeavesNoTtlBehind() {
    autoAckedEventLeavesNoTtlBehind(true);
  }

  @Test
  @DisplayName("in ackMode auto with deadLetter off only the event left unpolled is dropped")
  void autoAckedEventLeavesNoTtlBehindWhenDropping() {
    autoAckedEventLeavesNoTtlBehind(false);
  }

  private static void autoAckedEventLeavesNoTtlBehind(boolean deadLetter) {
    long scriptErrors = RedisCli.errors(redis.url(), "ERR");
    String topic = unique("autottl");
    String consumer = consumer(new JsonObject().put("ackMode", "auto").put("maxTtlMs", 1000).put("deadLetter", deadLetter), topic);
    http().publish(topic, event("polled"));
    assertEquals(1, http().poll(consumer, new JsonObject()).events().size());
    http().publish(topic, event("left"));
    String ended = deadLetter ? "deadLettered" : "dropped";
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getJsonObject("totals").getLong(ended) >= 1);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getJsonObject("totals").getLong(ended), metadata.encode());
    assertEquals(0, metadata.getLong("spooledEvents"));
    assertEquals(0, metadata.getLong("spooledBytes"));
    assertEquals(deadLetter ? List.of("left:TTL_EXPIRED") : List.of(), deadLetterReasons(consumer));
    assertEquals(deadLetter ? 1 : 0, metadata.getLong("deadLetters"));
    assertEquals(scriptErrors, RedisCli.errors(redis.url(), "ERR"), "no script failed inside Redis");
  }

  @Test
  @DisplayName("an acked event leaves no time-to-live entry behind")
  void ackRemovesTtl() {
    String topic = unique("ttlack");
    String consumer = consumer(new JsonObject().put("maxTtlMs", 60_000), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(consumer, new JsonObject());
    assertEquals(3, batch.events().size());
    assertEquals(List.of("ACKED", "ACKED", "ACKED"), http().post("/v1/consumers/" + consumer + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId")))).results()
        .stream().map(r -> ((JsonObject) r).getString("status")).toList());
    assertFalse(RedisCli.exists(redis.url(), "herald:{c:" + consumer + "}:ttl"));
    assertFalse(RedisCli.exists(redis.url(), "herald:{c:" + consumer + "}:expiry"));
  }

  @Test
  @DisplayName("with deadLetter off an expired event is dropped and counted")
  void ttlDrops() {
    String topic = unique("ttldrop");
    String consumer = consumer(new JsonObject().put("deadLetter", false), topic);
    http().publish(topic, new JsonObject().put("payload", 1).put("ttlMs", 1000));
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json()
        .getJsonObject("totals").getLong("dropped") == 1);
    assertEquals(0, http().metadata(consumer).json().getLong("spooledBytes"));
    assertEquals(0, http().poll(consumer, new JsonObject()).events().size());
  }
}
