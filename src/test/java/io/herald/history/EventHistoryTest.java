package io.herald.history;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class EventHistoryTest extends GatewayTest {

  private static JsonObject history(String consumer, String eventId) {
    Reply reply = nodeB.http().get("/v1/consumers/" + consumer + "/events/" + eventId);
    assertEquals(200, reply.status(), reply.body());
    return reply.json();
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
  @DisplayName("an acked event's history says ACKED, and how it went out (here over a WebSocket)")
  void ackedOverSocket() {
    String topic = unique("acked");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publishOne(topic);
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "poll"));
      JsonObject batch = socket.next();
      socket.send(new JsonObject().put("op", "ack").put("batchAckId", batch.getString("batchAckId")));
      assertEquals("ackResult", socket.next().getString("type"));
    }
    JsonObject story = history(consumer, eventId);
    assertEquals("ACKED", story.getString("state"));
    JsonObject delivery = story.getJsonArray("deliveries").getJsonObject(0);
    assertEquals("ACKED", delivery.getString("outcome"));
    assertEquals("ws", delivery.getString("connection"));
    assertEquals(delivery.getLong("handedOutAt") + 30_000, delivery.getLong("ackDeadline"));
    assertNull(story.getString("deadLetterReason"));
  }

  @Test
  @DisplayName("an event the consumer never held is 404")
  void unknownEvent() {
    String consumer = consumer(new JsonObject(), unique("none"));
    Reply reply = http().get("/v1/consumers/" + consumer + "/events/0000000000000-0000000000000000");
    assertEquals(404, reply.status());
    assertEquals("NOT_FOUND", reply.errorCode());
  }
}
