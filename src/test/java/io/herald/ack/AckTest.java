package io.herald.ack;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class AckTest extends GatewayTest {

  private static Map<String, String> statuses(Reply reply) {
    assertEquals(200, reply.status(), reply.body());
    return reply.results().stream().map(r -> (JsonObject) r)
        .collect(Collectors.toMap(r -> r.getString("ackId", r.getString("batchAckId")), r -> r.getString("status"),
            (a, b) -> a + "," + b));
  }

  private static JsonObject fastRedelivery() {
    return new JsonObject().put("ackTimeoutMs", 5000).put("redelivery", new JsonObject().put("initialDelayMs", 0));
  }

  @Test
  @DisplayName("an ack of the latest delivery is ACKED, a repeat ALREADY_ACKED, garbage UNKNOWN")
  void ackStatuses() {
    String topic = unique("ack");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    Reply batch = http().poll(consumer, max(10));
    String first = batch.ackIds().get(0);
    String forged = first.substring(0, first.length() - 4) + "0000";

    Map<String, String> results = statuses(http().ack(consumer, first, "not-an-ack-id", forged));
    assertEquals(Map.of(first, "ACKED", "not-an-ack-id", "UNKNOWN", forged, "UNKNOWN"), results);
    assertEquals(Map.of(first, "ALREADY_ACKED"), statuses(http().ack(consumer, first)));

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("unacked"));
    assertEquals(1, metadata.getJsonObject("totals").getLong("acked"));
  }

  @Test
  @DisplayName("a batchAckId acks every event of its batch, one row per event")
  void batchAck() {
    String topic = unique("batch");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(consumer, max(10));
    http().ack(consumer, batch.ackIds().get(1));

    Reply reply = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId")).add("0".repeat(32))));
    Map<String, String> results = statuses(reply);
    assertEquals("ACKED", results.get(batch.ackIds().get(0)));
    assertEquals("ALREADY_ACKED", results.get(batch.ackIds().get(1)));
    assertEquals("ACKED", results.get(batch.ackIds().get(2)));
    assertEquals("UNKNOWN", results.get("0".repeat(32)));
    assertEquals(0, http().metadata(consumer).json().getLong("unacked"));
  }

  @Test
  @DisplayName("another consumer's ackIds and batchAckIds are UNKNOWN and ack nothing")
  void otherConsumersAckIdsAreUnknown() {
    String topic = unique("shared");
    String mine = consumer(new JsonObject(), topic);
    String theirs = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    Reply batch = http().poll(theirs, max(10));
    String ackId = batch.ackIds().get(0);

    assertEquals(Map.of(ackId, "UNKNOWN"), statuses(http().ack(mine, ackId)));
    Reply byBatch = http().post("/v1/consumers/" + mine + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId"))));
    assertEquals("UNKNOWN", byBatch.results().getJsonObject(0).getString("status"));
    assertEquals(1, http().metadata(theirs).json().getLong("unacked"));
    assertEquals(Map.of(ackId, "ACKED"), statuses(http().ack(theirs, ackId)));
  }

  @Test
  @DisplayName("after a redelivery the earlier ackId is EXPIRED and only the latest one acks")
  void earlierDeliveryExpired() {
    String topic = unique("expired");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, event(1));
    String firstAckId = http().poll(consumer, max(1)).ackIds().get(0);
    Reply again = await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
        .until(() -> http().poll(consumer, max(1)), r -> r.events().size() == 1);
    String secondAckId = again.ackIds().get(0);

    assertEquals(Map.of(firstAckId, "EXPIRED"), statuses(http().ack(consumer, firstAckId)));
    assertEquals(1, http().metadata(consumer).json().getLong("unacked"));
    assertEquals(Map.of(secondAckId, "ACKED"), statuses(http().ack(consumer, secondAckId)));
    assertEquals(Map.of(firstAckId, "ALREADY_ACKED"), statuses(http().ack(consumer, firstAckId)));
  }

  @Test
  @DisplayName("an ack after the deadline is ACKED while the event was not handed out again")
  void lateAckStillCounts() {
    String topic = unique("late");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, event(1));
    String ackId = http().poll(consumer, max(1)).ackIds().get(0);
    await().atMost(Duration.ofSeconds(15)).until(() -> http().metadata(consumer).json().getLong("stale") == 1);
    assertEquals(Map.of(ackId, "ACKED"), statuses(http().ack(consumer, ackId)));
    assertEquals(List.of(), http().poll(consumer, max(1)).eventIds());
  }

  @Test
  @DisplayName("acks through one node of deliveries from another node work the same")
  void ackThroughOtherNode() {
    String topic = unique("cross");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    Reply batch = nodeA.http().poll(consumer, max(10));
    assertEquals(Map.of(batch.ackIds().get(0), "ACKED", batch.ackIds().get(1), "ACKED"),
        statuses(nodeB.http().ack(consumer, batch.ackIds().toArray(String[]::new))));
  }

  @Test
  @DisplayName("bad ack bodies get INVALID_REQUEST naming the field; unknown consumers 404")
  void badAckRequests() {
    String consumer = consumer(new JsonObject(), unique("badack"));
    Reply empty = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject());
    assertEquals(400, empty.status());
    Reply wrongType = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("ackIds", "x"));
    assertEquals(400, wrongType.status());
    assertEquals("ackIds", wrongType.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply tooMany = http().ack(consumer, java.util.Collections.nCopies(1001, "x").toArray(String[]::new));
    assertEquals(400, tooMany.status());
    assertEquals("ackIds", tooMany.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply tooManyBatches = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray(java.util.Collections.nCopies(11, "0".repeat(32)))));
    assertEquals(400, tooManyBatches.status());
    assertEquals(200, http().ack(consumer, java.util.Collections.nCopies(1000, "x").toArray(String[]::new)).status());
    Reply unknown = http().ack("no-such-consumer", "x");
    assertEquals(404, unknown.status());
    assertEquals("NOT_FOUND", unknown.errorCode());
  }
}
