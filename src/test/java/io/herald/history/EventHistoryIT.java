package io.herald.history;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.herald.store.Keys;
import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class EventHistoryIT extends GatewayTest {

  private static JsonObject history(String consumer, String eventId) {
    Reply reply = nodeB.http().get("/v1/consumers/" + consumer + "/events/" + eventId);
    assertEquals(200, reply.status(), reply.body());
    return reply.json();
  }

  private static String ackStatus(String consumer, String ackId) {
    return http().ack(consumer, ackId).results().getJsonObject(0).getString("status");
  }

  private static String publishOne(String topic) {
    return http().publish(topic, event("e")).results().getJsonObject(0).getString("eventId");
  }

  @Test
  @DisplayName("why an event ended in the dead-letter queue is one request: each delivery, its outcome and nack reason")
  void deadLetteredStory() {
    String topic = unique("story");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 2)), topic);
    String eventId = publishOne(topic);
    assertEquals("BACKLOG", history(consumer, eventId).getString("state"));
    for (int i = 0; i < 2; i++) {
      Reply batch = http().poll(consumer, new JsonObject().put("waitMs", 5000));
      http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE").put("delayMs", 0)
          .put("reason", "timeout calling billing"));
    }

    JsonObject story = history(consumer, eventId);
    assertEquals("DEAD_LETTERED", story.getString("state"));
    assertEquals("MAX_DELIVERIES", story.getString("deadLetterReason"));
    JsonArray deliveries = story.getJsonArray("deliveries");
    assertEquals(2, deliveries.size());
    JsonObject first = deliveries.getJsonObject(0);
    assertEquals(1, first.getInteger("deliveryCount"));
    assertEquals("REQUEUED", first.getString("outcome"));
    assertEquals("timeout calling billing", first.getString("reason"));
    assertEquals("http", first.getString("connection"));
    assertEquals(2, deliveries.getJsonObject(1).getInteger("deliveryCount"));
  }

  @Test
  @DisplayName("an unacked delivery's history says how it went out (here over a WebSocket)")
  void deliveredOverSocket() {
    String topic = unique("socket");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publishOne(topic);
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "poll"));
      socket.next();
      JsonObject story = history(consumer, eventId);
      assertEquals("DELIVERED", story.getString("state"));
      JsonObject delivery = story.getJsonArray("deliveries").getJsonObject(0);
      assertNull(delivery.getString("outcome"));
      assertEquals("ws", delivery.getString("connection"));
      assertEquals(delivery.getLong("handedOutAt") + 30_000, delivery.getLong("ackDeadline"));
    }
  }

  @Test
  @DisplayName("a delivery shows while unacked; acked on its first delivery an event leaves no history (only its ack bit); a requeued one keeps every delivery in order")
  void commonAndRequeuedLives() {
    String topic = unique("lives");
    String consumer = consumer(new JsonObject(), topic);
    String plain = publishOne(topic);
    Reply first = http().poll(consumer, new JsonObject());
    JsonObject pending = history(consumer, plain);
    assertEquals("DELIVERED", pending.getString("state"));
    assertEquals(1, pending.getJsonArray("deliveries").getJsonObject(0).getInteger("deliveryCount"));
    http().ack(consumer, first.ackIds().get(0));
    assertEquals(404, nodeB.http().get("/v1/consumers/" + consumer + "/events/" + plain).status());
    assertEquals(0, RedisCli.send(redis.url(), Request.cmd(Command.HEXISTS).arg("herald:{c:" + consumer + "}:memory")
        .arg("h:" + plain)).toInteger());
    assertEquals("ALREADY_ACKED", http().ack(consumer, first.ackIds().get(0)).json()
        .getJsonArray("results").getJsonObject(0).getString("status"));

    String requeued = publishOne(topic);
    Reply handed = http().poll(consumer, new JsonObject());
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject().put("ackIds", new JsonArray(handed.ackIds()))
        .put("action", "REQUEUE").put("delayMs", 0));
    Reply again = http().poll(consumer, new JsonObject().put("waitMs", 5000));
    http().ack(consumer, again.ackIds().get(0));
    JsonObject story = history(consumer, requeued);
    assertEquals("ACKED", story.getString("state"));
    JsonArray deliveries = story.getJsonArray("deliveries");
    assertEquals(2, deliveries.size(), story.encode());
    assertEquals("REQUEUED", deliveries.getJsonObject(0).getString("outcome"));
    assertEquals(2, deliveries.getJsonObject(1).getInteger("deliveryCount"));
    assertEquals("ACKED", deliveries.getJsonObject(1).getString("outcome"));
  }

  @Test
  @DisplayName("an event redriven from the dead-letter queue, then acked on its next delivery, says ACKED")
  void redrivenThenAcked() {
    String topic = unique("redriven");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    String eventId = publishOne(topic);
    Reply batch = http().poll(consumer, new JsonObject());
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE").put("delayMs", 0));
    assertEquals("DEAD_LETTERED", history(consumer, eventId).getString("state"));
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(eventId))).status());
    Reply again = http().poll(consumer, new JsonObject().put("waitMs", 5000));
    http().ack(consumer, again.ackIds().get(0));

    JsonObject story = history(consumer, eventId);
    assertEquals("ACKED", story.getString("state"), story.encode());
    assertEquals("MAX_DELIVERIES", story.getString("deadLetterReason"));
  }

  @Test
  @DisplayName("a delivery recorded by 0.6.0 (its hand-out entry in the deliveries entry) shows in the history")
  void deliveryOfEarlierVersion() {
    String topic = unique("older");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publishOne(topic);
    String[] parts = http().poll(consumer, new JsonObject()).ackIds().get(0).split("\\.");
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:deliveries", eventId,
        "1:" + parts[1] + ":" + parts[3] + "|D 1000 1 31000 oldnode http");
    JsonObject delivery = history(consumer, eventId).getJsonArray("deliveries").getJsonObject(0);
    assertEquals("oldnode", delivery.getString("node"));
    assertEquals(31_000L, delivery.getLong("ackDeadline"));
  }

  @Test
  @DisplayName("a history kept by a version before 0.9.0 (a list of its own) shows before the entries noted since; a reason keeps any text")
  void historyOfEarlierVersion() {
    String topic = unique("older");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publishOne(topic);
    RedisCli.send(redis.url(), Request.cmd(Command.RPUSH).arg("herald:{c:" + consumer + "}:history:" + eventId)
        .arg("D 1000 1 31000 oldnode http").arg("X 31000"));
    Reply batch = http().poll(consumer, new JsonObject());
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE").put("delayMs", 60_000)
        .put("reason", "two\nlines 12 D 3"));
    JsonArray deliveries = history(consumer, eventId).getJsonArray("deliveries");
    assertEquals(2, deliveries.size(), deliveries.encode());
    assertEquals("oldnode", deliveries.getJsonObject(0).getString("node"));
    assertEquals("REQUEUED", deliveries.getJsonObject(1).getString("outcome"), deliveries.encode());
    assertEquals("two\nlines 12 D 3", deliveries.getJsonObject(1).getString("reason"));
  }

  @Test
  @DisplayName("what a consumer remembers (histories, hand-out records) goes once its time came: the scheduler forgets it")
  void memoryForgotten() {
    String topic = unique("forget");
    String consumer = consumer(new JsonObject(), topic);
    publishOne(topic);
    Reply batch = http().poll(consumer, new JsonObject());
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE").put("delayMs", 600_000).put("reason", "later"));
    String memory = "herald:{c:" + consumer + "}:memory";
    String forgets = "herald:{c:" + consumer + "}:forgets";
    assertEquals(2, RedisCli.send(redis.url(), Request.cmd(Command.HLEN).arg(memory)).toInteger());
    // the poll's hand-out record is kept its deliveries' ack timeout (30 s) + 10 min, the nacked
    // event's history its retention (7 days) + 10 min
    long now = RedisCli.millis(redis.url());
    for (Response field : RedisCli.send(redis.url(), Request.cmd(Command.HKEYS).arg(memory))) {
      long kept = RedisCli.send(redis.url(), Request.cmd(Command.ZSCORE).arg(forgets).arg(field.toString())).toLong() - now;
      long expected = field.toString().startsWith("r:") ? 630_000 : 604_800_000 + 600_000;
      assertTrue(kept > expected - 30_000 && kept <= expected, field + " kept " + kept + " ms from now");
    }
    // their time came long ago, and with it the consumer's turn with the scheduler; with them more
    // than a step takes (its batchSize, 500), so that it takes the rest in the steps after
    for (Response field : RedisCli.send(redis.url(), Request.cmd(Command.ZRANGE).arg(forgets).arg(0).arg(-1))) {
      RedisCli.send(redis.url(), Request.cmd(Command.ZADD).arg(forgets).arg(1).arg(field.toString()));
    }
    Request fields = Request.cmd(Command.HSET).arg(memory);
    Request times = Request.cmd(Command.ZADD).arg(forgets);
    for (int i = 0; i < 1_200; i++) {
      fields.arg("h:old-" + i).arg("5 A 100");
      times.arg(1).arg("h:old-" + i);
    }
    RedisCli.send(redis.url(), fields);
    RedisCli.send(redis.url(), times);
    RedisCli.send(redis.url(), Request.cmd(Command.ZADD).arg(Keys.DUE).arg(1).arg(consumer));
    await().atMost(Duration.ofSeconds(10)).until(() -> !RedisCli.exists(redis.url(), memory));
    assertFalse(RedisCli.exists(redis.url(), forgets));
    // the event itself is held as before
    assertEquals("SCHEDULED", history(consumer, batch.eventIds().get(0)).getString("state"));
  }

  @Test
  @DisplayName("a consumer made under the name of one whose memory outlived it (deleted by a version before 0.9.0) starts with none")
  void memoryOfPredecessor() {
    String topic = unique("again");
    String consumer = consumer(new JsonObject(), topic);
    String memory = "herald:{c:" + consumer + "}:memory";
    RedisCli.hset(redis.url(), memory, "a:0", "\u00ff");
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg("herald:{c:" + consumer + "}:meta"));
    assertEquals(201, http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(topic))).status());
    assertFalse(RedisCli.exists(redis.url(), memory));
  }

  @Test
  @DisplayName("an event the consumer never held is 404")
  void unknownEvent() {
    String consumer = consumer(new JsonObject(), unique("none"));
    Reply reply = http().get("/v1/consumers/" + consumer + "/events/0000000000000-0000000000000000");
    assertEquals(404, reply.status());
    assertEquals("NOT_FOUND", reply.errorCode());
  }

  @Test
  @DisplayName("an event's history is bounded: after many nacked deliveries it keeps the first hand-out, says how many entries went, and the latest")
  void historyIsBounded() {
    String topic = unique("bounded");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publishOne(topic);
    String reason = "r".repeat(1000);
    List<String> ackIds = new java.util.ArrayList<>();
    for (int i = 0; i < 40; i++) {
      Reply batch = http().poll(consumer, new JsonObject().put("waitMs", 5000));
      assertEquals(List.of(eventId), batch.eventIds(), batch.body());
      ackIds.add(batch.ackIds().get(0));
      assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE").put("delayMs", 0)
          .put("reason", reason + i)).status());
    }
    long held = RedisCli.send(redis.url(), Request.cmd(Command.HSTRLEN).arg("herald:{c:" + consumer + "}:memory")
        .arg("h:" + eventId)).toLong();
    assertTrue(held <= 16_384 + 1100, "the list holds " + held + " bytes");

    JsonObject story = history(consumer, eventId);
    JsonArray deliveries = story.getJsonArray("deliveries");
    assertTrue(story.getLong("omittedEntries") > 40, story.encode());
    assertEquals(1, deliveries.getJsonObject(0).getInteger("deliveryCount"));
    assertEquals(reason + 0, deliveries.getJsonObject(0).getString("reason"), "the first hand-out is kept whole");
    JsonObject last = deliveries.getJsonObject(deliveries.size() - 1);
    assertEquals(40, last.getInteger("deliveryCount"));
    assertEquals(reason + 39, last.getString("reason"));
    // no outcome of a delivery whose hand-out went is taken for another's
    for (int i = 0; i < deliveries.size(); i++) {
      JsonObject delivery = deliveries.getJsonObject(i);
      assertEquals(reason + (delivery.getInteger("deliveryCount") - 1), delivery.getString("reason"), story.encode());
    }

    // acked on its 41st delivery: an early delivery whose entries went is still told from it
    String latest = http().poll(consumer, new JsonObject().put("waitMs", 5000)).ackIds().get(0);
    assertEquals("ACKED", ackStatus(consumer, latest));
    assertEquals("EXPIRED", ackStatus(consumer, ackIds.get(4)));
    assertEquals("EXPIRED", ackStatus(consumer, ackIds.get(0)));
    assertEquals("ALREADY_ACKED", ackStatus(consumer, latest));
  }
}
