package io.herald.deadletter;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class TimeToLiveIT extends GatewayTest {

  /** "payload:deadLetterReason" of each event in the consumer's dead-letter queue. */
  /** payload:deadLetterReason of each dead letter, and :reason when it has a nack reason (these have none). */
  private static List<String> deadLetterReasons(String consumer) {
    Reply dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject().put("maxEvents", 10));
    return dead.events().stream().map(JsonObject.class::cast).map(e -> e.getValue("payload") + ":"
        + e.getString("deadLetterReason") + (e.containsKey("reason") ? ":" + e.getValue("reason") : "")).toList();
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

  @Test
  @DisplayName("an event whose TTL ends in the backlog leaves it from the middle: the events around it go out in order; redriven before its place is reached, it takes that place again and goes out once")
  void ttlLeavesBacklogFromTheMiddle() {
    String topic = unique("middle");
    String consumer = consumer(new JsonObject(), topic);
    assertEquals(200, http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", "first"))
        .add(new JsonObject().put("payload", "brief").put("ttlMs", 1000))
        .add(new JsonObject().put("payload", "last")))).status());
    await().atMost(Duration.ofSeconds(10)).until(() -> deadLetterReasons(consumer).size() == 1);
    assertEquals(2, http().metadata(consumer).json().getLong("backlog"));

    Reply redriven = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive", new JsonObject().put("all", true));
    assertEquals(200, redriven.status(), redriven.body());
    assertEquals(3, http().metadata(consumer).json().getLong("backlog"));
    Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 10));
    assertEquals(List.of("first", "brief", "last"), batch.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
    assertEquals(0, http().poll(consumer, new JsonObject().put("maxEvents", 10)).events().size());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("backlog"), metadata.encode());
    assertEquals(3, metadata.getLong("unacked"), metadata.encode());
    assertFalse(RedisCli.exists(redis.url(), "herald:{c:" + consumer + "}:gone"), "no dead pair is left");
  }

  @Test
  @DisplayName("an event whose TTL ends in the backlog, dropped with deadLetter off: the next poll skips its place, and nothing of it is left")
  void ttlDropLeavesNothingInTheBacklog() {
    String topic = unique("middrop");
    String consumer = consumer(new JsonObject().put("deadLetter", false), topic);
    assertEquals(200, http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", "brief").put("ttlMs", 1000))
        .add(new JsonObject().put("payload", "kept")))).status());
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getLong("backlog") == 1);
    Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 10));
    assertEquals(List.of("kept"), batch.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
    assertFalse(RedisCli.exists(redis.url(), "herald:{c:" + consumer + "}:gone"), "no dead pair is left");
    assertEquals(0, RedisCli.send(redis.url(), Request.cmd(Command.LLEN).arg("herald:{c:" + consumer + "}:arrivals")).toLong());
  }

  @Test
  @DisplayName("an event whose TTL ends in the backlog is acked from the dead-letter queue like any other")
  void ttlEndedInBacklogIsAckedFromDeadLetters() {
    String topic = unique("midack");
    String consumer = consumer(new JsonObject(), topic);
    assertEquals(200, http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", "first"))
        .add(new JsonObject().put("payload", "brief").put("ttlMs", 1000)))).status());
    await().atMost(Duration.ofSeconds(10)).until(() -> deadLetterReasons(consumer).size() == 1);
    String path = "/v1/consumers/" + consumer + "/dead-letters";
    String ackId = http().post(path + "/poll", new JsonObject().put("maxEvents", 10)).ackIds().get(0);
    Reply acked = http().post(path + "/acks", new JsonObject().put("ackIds", new JsonArray().add(ackId)));
    assertEquals("ACKED", acked.results().getJsonObject(0).getString("status"), acked.body());
    assertEquals(List.of(), deadLetterReasons(consumer));
  }

  @Test
  @DisplayName("a run of dead backlog pairs longer than a call drops does not hold a long poll back: the event behind it goes out within the wait")
  void longRunOfDeadPairsDoesNotHoldPollsBack() {
    String topic = unique("deadrun");
    String consumer = consumer(new JsonObject().put("deadLetter", false).put("maxPollRecords", 1000), topic);
    assertEquals(200, http().publish(topic, events("head")).status());
    int brief = 5000;
    for (int sent = 0; sent < brief; sent += 1000) {
      JsonArray batch = new JsonArray();
      for (int i = 0; i < 1000; i++) {
        batch.add(new JsonObject().put("payload", i).put("ttlMs", 1000));
      }
      assertEquals(200, http().publish(topic, new JsonObject().put("events", batch)).status());
    }
    assertEquals(200, http().publish(topic, events("behind")).status());
    await().atMost(Duration.ofSeconds(20)).until(() -> http().metadata(consumer).json().getLong("backlog") == 2);
    assertEquals(List.of("head"), http().poll(consumer, new JsonObject().put("maxEvents", 1)).events().stream()
        .map(e -> ((JsonObject) e).getValue("payload")).toList());
    Reply behind = http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 5000));
    assertEquals(List.of("behind"), behind.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
  }
}
