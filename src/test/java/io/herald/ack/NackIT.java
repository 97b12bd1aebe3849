package io.herald.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.awaitility.Awaitility.await;

@Timeout(60)
class NackIT extends GatewayTest {

  private static JsonObject nack(String consumer, String ackId, JsonObject body) {
    Reply reply = nodeB.http().post("/v1/consumers/" + consumer + "/nacks",
        body.copy().put("ackIds", new JsonArray().add(ackId)));
    assertEquals(200, reply.status(), reply.body());
    return reply.results().getJsonObject(0);
  }

  private static String nackStatus(String consumer, String ackId, JsonObject body) {
    return nack(consumer, ackId, body).getString("status");
  }

  private static JsonObject requeue(Long delayMs) {
    JsonObject body = new JsonObject().put("action", "REQUEUE");
    return delayMs == null ? body : body.put("delayMs", delayMs);
  }

  private static JsonObject metadata(String consumer) {
    return http().metadata(consumer).json();
  }

  /** The one event a poll hands out, waiting up to {@code waitMs} for it. */
  private static JsonObject pollOne(String consumer, long waitMs) {
    Reply reply = http().poll(consumer, new JsonObject().put("maxEvents", 1).put("waitMs", waitMs));
    assertEquals(1, reply.events().size(), reply.body());
    return reply.events().getJsonObject(0);
  }


  @Test
  @DisplayName("REQUEUE without delayMs waits out the consumer's backoff for the delivery count, then delivers again with the count going on")
  void requeueWaitsOutBackoff() {
    String topic = unique("requeue");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("initialDelayMs", 1500)), topic);
    http().publish(topic, event("again"));
    JsonObject first = pollOne(consumer, 0);
    long nackedAt = RedisCli.millis(redis.url());
    assertEquals("REQUEUED", nackStatus(consumer, first.getString("ackId"), requeue(null)));

    JsonObject waiting = metadata(consumer);
    assertEquals(1, waiting.getLong("scheduled"));
    assertEquals(0, waiting.getLong("unacked"), "waiting out a nack delay is not unacked");
    assertEquals(0, http().poll(consumer, new JsonObject()).events().size(), "not before the backoff");

    JsonObject again = pollOne(consumer, 10_000);
    assertEquals(first.getString("eventId"), again.getString("eventId"));
    assertEquals(2, again.getInteger("deliveryCount"));
    long handedOutAt = again.getLong("ackDeadline") - 30_000;
    assertTrue(handedOutAt - nackedAt >= 1500, "handed out " + (handedOutAt - nackedAt) + " ms after the nack");
    assertEquals(1, metadata(consumer).getJsonObject("totals").getLong("redelivered"));
  }

  @Test
  @DisplayName("REQUEUE with delayMs 0 wakes a waiting long poll at once; the old ackId is then EXPIRED")
  void requeueAtOnce() {
    String topic = unique("now");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event("x"));
    JsonObject first = pollOne(consumer, 0);
    assertEquals("REQUEUED", nackStatus(consumer, first.getString("ackId"), requeue(0L)));
    JsonObject again = pollOne(consumer, 10_000);
    assertEquals(2, again.getInteger("deliveryCount"));
    assertEquals("EXPIRED", nackStatus(consumer, first.getString("ackId"), requeue(0L)));
    assertEquals("ACKED", http().ack(consumer, again.getString("ackId")).results().getJsonObject(0).getString("status"));
    assertEquals("ALREADY_ACKED", nackStatus(consumer, again.getString("ackId"), requeue(0L)));
    assertEquals("UNKNOWN", nackStatus(consumer, "not-an-ack-id", requeue(0L)));
  }

  @Test
  @DisplayName("events waiting out a nack delay do not count against maxUnacked")
  void scheduledDoNotHoldBack() {
    String topic = unique("cap");
    String consumer = consumer(new JsonObject().put("maxUnacked", 1), topic);
    http().publish(topic, events(1, 2));
    JsonObject first = pollOne(consumer, 0);
    assertEquals("MAX_UNACKED", http().poll(consumer, new JsonObject()).json().getString("heldBack"));
    nackStatus(consumer, first.getString("ackId"), requeue(60_000L));
    assertEquals(2, pollOne(consumer, 0).getInteger("payload"));
  }

  @Test
  @DisplayName("the nack that would exceed maxDeliveries dead-letters the event; a late ack of it says DEAD_LETTERED")
  void maxDeliveriesByNack() {
    String topic = unique("poison");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 2)), topic);
    http().publish(topic, event("poison"));
    JsonObject first = pollOne(consumer, 0);
    assertEquals("REQUEUED", nackStatus(consumer, first.getString("ackId"), requeue(0L).put("reason", "bad input")));
    JsonObject second = pollOne(consumer, 5_000);
    assertEquals("DEAD_LETTERED", nackStatus(consumer, second.getString("ackId"), requeue(0L).put("reason", "still bad")));

    JsonObject metadata = metadata(consumer);
    assertEquals(1, metadata.getLong("deadLetters"));
    assertEquals(0, metadata.getLong("scheduled") + metadata.getLong("unacked") + metadata.getLong("backlog"));
    assertEquals(1, metadata.getJsonObject("totals").getLong("deadLettered"));
    assertEquals("DEAD_LETTERED", http().ack(consumer, second.getString("ackId")).results().getJsonObject(0).getString("status"));
    assertEquals(0, http().poll(consumer, new JsonObject()).events().size());
  }

  @Test
  @DisplayName("a missed deadline that would lead to a delivery beyond maxDeliveries dead-letters the event")
  void maxDeliveriesByDeadline() {
    String topic = unique("slow");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    http().publish(topic, event("slow"));
    pollOne(consumer, 0);
    await().atMost(Duration.ofSeconds(15)).until(() -> metadata(consumer).getLong("deadLetters") == 1);
    assertEquals(0, metadata(consumer).getLong("unacked"));
  }

  @Test
  @DisplayName("REJECT sends the event to the error queue; with errorQueue or deadLetter off it is dropped and counted")
  void rejectAndDrop() {
    String topic = unique("reject");
    String kept = consumer(new JsonObject(), topic);
    String dropping = consumer(new JsonObject().put("errorQueue", false).put("deadLetter", false)
        .put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    http().publish(topic, events(1, 2));

    assertEquals("REJECTED", nackStatus(kept, pollOne(kept, 0).getString("ackId"),
        new JsonObject().put("action", "REJECT").put("reason", "malformed")));
    assertEquals(1, metadata(kept).getLong("errors"));
    assertEquals(1, metadata(kept).getJsonObject("totals").getLong("rejected"));

    JsonObject rejected = pollOne(dropping, 0);
    assertEquals("DROPPED", nackStatus(dropping, rejected.getString("ackId"), new JsonObject().put("action", "REJECT")));
    assertEquals("DROPPED", nackStatus(dropping, pollOne(dropping, 0).getString("ackId"), requeue(0L)));
    JsonObject metadata = metadata(dropping);
    assertEquals(2, metadata.getJsonObject("totals").getLong("dropped"));
    assertEquals(0, metadata.getLong("errors") + metadata.getLong("deadLetters") + metadata.getLong("spooledBytes"));
    assertEquals("DEAD_LETTERED", http().ack(dropping, rejected.getString("ackId")).results().getJsonObject(0).getString("status"));
  }

  @Test
  @DisplayName("extend gives the latest delivery a new deadline now + extendMs; others are EXPIRED, ALREADY_ACKED or UNKNOWN")
  void extend() {
    String topic = unique("extend");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000), topic);
    http().publish(topic, events(1, 2));
    Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 2));
    String kept = batch.ackIds().get(0);
    String acked = batch.ackIds().get(1);
    http().ack(consumer, acked);
    long before = RedisCli.millis(redis.url());
    Reply reply = nodeB.http().post("/v1/consumers/" + consumer + "/extend", new JsonObject()
        .put("ackIds", new JsonArray().add(kept).add(acked).add("nonsense")).put("extendMs", 60_000));
    assertEquals(200, reply.status(), reply.body());
    JsonObject extended = reply.results().getJsonObject(0);
    assertEquals("EXTENDED", extended.getString("status"));
    assertEquals(before + 60_000, extended.getLong("ackDeadline"), 2000);
    assertEquals("ALREADY_ACKED", reply.results().getJsonObject(1).getString("status"));
    assertEquals("UNKNOWN", reply.results().getJsonObject(2).getString("status"));

    // past the original deadline it is still pending, not stale
    await().pollDelay(Duration.ofMillis(5500)).atMost(Duration.ofSeconds(10))
        .until(() -> RedisCli.millis(redis.url()) > batch.events().getJsonObject(0).getLong("ackDeadline") + 500);
    assertEquals(0, metadata(consumer).getLong("stale"));
    assertEquals(0, http().poll(consumer, new JsonObject()).events().size());
  }

  @Test
  @DisplayName("bad nack and extend bodies get 400 naming the field")
  void validation() {
    String consumer = consumer(new JsonObject(), unique("bad"));
    String path = "/v1/consumers/" + consumer;
    JsonArray ids = new JsonArray().add("x");
    assertEquals("action", field(http().post(path + "/nacks", new JsonObject().put("ackIds", ids))));
    assertEquals("reason", field(http().post(path + "/nacks", new JsonObject().put("ackIds", ids)
        .put("action", "REJECT").put("reason", "x".repeat(1025)))));
    assertEquals("delayMs", field(http().post(path + "/nacks", new JsonObject().put("ackIds", ids)
        .put("action", "REQUEUE").put("delayMs", 86_400_001))));
    assertEquals("ackIds", field(http().post(path + "/nacks", new JsonObject().put("action", "REJECT"))));
    assertEquals("extendMs", field(http().post(path + "/extend", new JsonObject().put("ackIds", ids).put("extendMs", 999))));
    assertEquals("colour", field(http().post(path + "/extend", new JsonObject().put("ackIds", ids)
        .put("extendMs", 1000).put("colour", "red"))));
  }

  private static String field(Reply reply) {
    assertEquals(400, reply.status(), reply.body());
    return reply.json().getJsonObject("error").getJsonObject("details").getString("field");
  }

  @Test
  @DisplayName("over a WebSocket: nack and extend answer nackResult and extendResult, and a nack opens the push window")
  void overWebSocket() {
    String topic = unique("wsnack");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 1));
      assertEquals("subscribed", socket.next().getString("type"));
      JsonObject first = socket.next().getJsonArray("events").getJsonObject(0);
      socket.send(new JsonObject().put("op", "extend").put("requestId", "e").put("extendMs", 120_000)
          .put("ackIds", new JsonArray().add(first.getString("ackId"))));
      JsonObject extendResult = socket.next();
      assertEquals("extendResult", extendResult.getString("type"));
      assertEquals("e", extendResult.getString("requestId"));
      assertEquals("EXTENDED", extendResult.getJsonArray("results").getJsonObject(0).getString("status"));

      socket.send(new JsonObject().put("op", "nack").put("requestId", "n").put("action", "REQUEUE").put("delayMs", 60_000)
          .put("ackIds", new JsonArray().add(first.getString("ackId"))));
      JsonObject nackResult = socket.next();
      assertEquals("nackResult", nackResult.getString("type"));
      assertEquals(List.of("REQUEUED"), nackResult.getJsonArray("results").stream()
          .map(r -> ((JsonObject) r).getString("status")).toList());
      // the window of 1 is free again: the next event is pushed
      assertEquals(2, socket.next().getJsonArray("events").getJsonObject(0).getInteger("payload"));
    }
  }

  /** Sends {@code body} with {@code ackId} 1,000 times over, six times, timing another consumer's metadata meanwhile. */
  private static void repeatedSixTimes(String consumer, String route, String ackId, JsonObject body, String status) {
    String bystander = consumer(new JsonObject(), unique("bystander"));
    JsonArray repeated = new JsonArray();
    for (int i = 0; i < 1000; i++) {
      repeated.add(ackId);
    }
    AtomicBoolean sending = new AtomicBoolean(true);
    CompletableFuture<Long> slowest = CompletableFuture.supplyAsync(() -> {
      long most = 0;
      do {
        long started = System.nanoTime();
        assertEquals(200, nodeA.http().metadata(bystander).status());
        most = Math.max(most, (System.nanoTime() - started) / 1_000_000);
      } while (sending.get());
      return most;
    });
    try {
      for (int request = 0; request < 6; request++) {
        Reply reply = nodeB.http().post("/v1/consumers/" + consumer + "/" + route, body.copy().put("ackIds", repeated));
        assertEquals(200, reply.status(), reply.body());
        assertEquals(1000, reply.results().size());
        for (Object row : reply.results()) {
          assertEquals(status, ((JsonObject) row).getString("status"));
        }
      }
    } finally {
      sending.set(false);
    }
    assertTrue(slowest.join() < 1000, "another consumer's metadata took " + slowest.join() + " ms");
  }

  private static long historyBytes(String consumer, String eventId) {
    return RedisCli.send(redis.url(), Request.cmd(Command.HSTRLEN)
        .arg("herald:{c:" + consumer + "}:memory").arg("h:" + eventId)).toLong();
  }

  @Test
  @DisplayName("an ackId repeated 1,000 times in each of six REQUEUE nacks with a long reason is requeued once: its history stays small and other consumers are answered meanwhile")
  void repeatedNackIsSettledOnce() {
    String topic = unique("repeat");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event("once"));
    JsonObject delivery = pollOne(consumer, 0);
    repeatedSixTimes(consumer, "nacks", delivery.getString("ackId"), requeue(86_400_000L).put("reason", "x".repeat(1000)),
        "REQUEUED");
    assertTrue(historyBytes(consumer, delivery.getString("eventId")) < 64 * 1024);
    JsonArray deliveries = http().get("/v1/consumers/" + consumer + "/events/" + delivery.getString("eventId")).json()
        .getJsonArray("deliveries");
    assertEquals(1, deliveries.size(), deliveries.encode());
    assertEquals(1, metadata(consumer).getLong("scheduled"));
  }

  @Test
  @DisplayName("a REQUEUE of a delivery already waiting out one changes nothing: its delay stands")
  void requeueOfRequeuedChangesNothing() {
    String topic = unique("requeued");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event("soon"));
    JsonObject delivery = pollOne(consumer, 0);
    assertEquals("REQUEUED", nackStatus(consumer, delivery.getString("ackId"), requeue(1000L)));
    assertEquals("REQUEUED", nackStatus(consumer, delivery.getString("ackId"), requeue(86_400_000L)));
    JsonObject again = pollOne(consumer, 5000);
    assertEquals(2, again.getInteger("deliveryCount"));
  }

  @Test
  @DisplayName("an ackId repeated 1,000 times in each of six extends is extended once per request")
  void repeatedExtendIsSettledOnce() {
    String topic = unique("extends");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event("long work"));
    JsonObject delivery = pollOne(consumer, 0);
    repeatedSixTimes(consumer, "extend", delivery.getString("ackId"), new JsonObject().put("extendMs", 60_000), "EXTENDED");
    assertTrue(historyBytes(consumer, delivery.getString("eventId")) < 2048,
        historyBytes(consumer, delivery.getString("eventId")) + " bytes of history");
  }
}
