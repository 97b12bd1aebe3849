package io.herald.ws;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class PublishSocketIT extends GatewayTest {

  private static TestSocket open() {
    return TestSocket.connect(nodeA.port(), "/v1/ws/publish");
  }

  @Test
  @DisplayName("many publish requests in flight on one socket are each answered with their results once stored")
  void manyInFlight() {
    String topic = unique("wspub");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 1000), topic);
    try (TestSocket socket = open()) {
      for (int i = 0; i < 50; i++) {
        socket.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", i)
            .put("events", new JsonArray().add(new JsonObject().put("payload", new JsonObject().put("n", i)))
                .add(new JsonObject().put("payload", "second").put("correlationId", "c-" + i))));
      }
      Map<Integer, JsonArray> results = new HashMap<>();
      for (int i = 0; i < 50; i++) {
        JsonObject answer = socket.next();
        assertEquals("publishResult", answer.getString("type"), answer.encode());
        results.put(answer.getInteger("requestId"), answer.getJsonArray("results"));
      }
      assertEquals(50, results.size());
      List<String> confirmed = new ArrayList<>();
      results.values().forEach(rows -> rows.forEach(r -> {
        assertEquals("CONFIRMED", ((JsonObject) r).getString("status"));
        assertEquals(1, ((JsonObject) r).getInteger("matched"));
        confirmed.add(((JsonObject) r).getString("eventId"));
      }));
      assertEquals("c-7", results.get(7).getJsonObject(1).getString("correlationId"));
      List<String> delivered = http().poll(consumer, max(1000)).eventIds();
      assertEquals(100, delivered.size());
      assertEquals(new java.util.HashSet<>(confirmed), new java.util.HashSet<>(delivered));
    }
  }

  @Test
  @DisplayName("payloads published over a socket are delivered as the bytes that were sent")
  void payloadBytesKept() {
    String topic = unique("bytes");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = open()) {
      socket.sendText("{\"op\":\"publish\",\"topic\":\"" + topic + "\",\"events\":[{\"payload\": {\"b\" : 1.50}}]}");
      assertEquals("publishResult", socket.next().getString("type"));
    }
    String body = http().poll(consumer, max(1)).body();
    assertEquals(true, body.contains("\"payload\":{\"b\" : 1.50}"), body);
  }

  @Test
  @DisplayName("bad publish frames get error frames with the requestId and store nothing; the socket stays usable")
  void badFrames() {
    String topic = unique("badpub");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = open()) {
      socket.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", "a")
          .put("events", new JsonArray().add(new JsonObject().put("nopayload", 1))));
      JsonObject malformed = socket.next();
      assertEquals("error", malformed.getString("type"));
      assertEquals("a", malformed.getString("requestId"));
      assertEquals("events[0].nopayload", malformed.getJsonObject("details").getString("field"));

      socket.send(new JsonObject().put("op", "publish").put("requestId", "b")
          .put("events", new JsonArray().add(new JsonObject().put("payload", 1))));
      assertEquals("topic", socket.next().getJsonObject("details").getString("field"));

      socket.send(new JsonObject().put("op", "publish").put("topic", "$sys/alerts").put("requestId", "c")
          .put("events", new JsonArray().add(new JsonObject().put("payload", 1))));
      assertEquals("PUBLISH_ACL_DENIED", socket.next().getString("code"));

      socket.sendText("not json at all");
      assertEquals("INVALID_REQUEST", socket.next().getString("code"));

      socket.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", "d")
          .put("events", new JsonArray().add(new JsonObject().put("payload", 1))));
      assertEquals("publishResult", socket.next().getString("type"));
    }
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
  }
}
