package io.herald.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class PublishTest extends GatewayTest {

  @Test
  @DisplayName("a confirmed event is stored for every matching consumer and says how many matched")
  void confirmsWithMatchedCount() {
    String topic = unique("orders") + "/eu/created";
    String level = topic.split("/")[0];
    String exact = consumer(new JsonObject(), topic);
    String star = consumer(new JsonObject(), level + "/*/created");
    String gt = consumer(new JsonObject(), level + "/>");
    String other = consumer(new JsonObject(), level + "/us/>");

    Reply reply = http().publish(topic, event(new JsonObject().put("n", 1)).put("correlationId", "corr-1"));
    assertEquals(200, reply.status(), reply.body());
    JsonObject result = reply.results().getJsonObject(0);
    assertEquals("CONFIRMED", result.getString("status"));
    assertEquals(3, result.getInteger("matched"));
    assertEquals("corr-1", result.getString("correlationId"));

    for (String consumer : List.of(exact, star, gt)) {
      assertEquals(List.of(result.getString("eventId")), http().poll(consumer, max(10)).eventIds());
    }
    assertEquals(List.of(), http().poll(other, max(10)).eventIds());
  }

  @Test
  @DisplayName("an event nobody subscribes to is confirmed with matched 0 and kept nowhere")
  void noMatchingConsumer() {
    JsonObject result = http().publish(unique("nobody"), event(1)).results().getJsonObject(0);
    assertEquals("CONFIRMED", result.getString("status"));
    assertEquals(0, result.getInteger("matched"));
  }

  @Test
  @DisplayName("eventIds sort as text in publish order")
  void eventIdsSortInPublishOrder() {
    String topic = unique("sorted");
    consumer(new JsonObject(), topic);
    List<String> ids = new java.util.ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(http().publish(topic, events(i, i)).results().getJsonObject(0).getString("eventId"));
      ids.add(http().publish(topic, events(i, i)).results().getJsonObject(1).getString("eventId"));
    }
    List<String> sorted = new java.util.ArrayList<>(ids);
    java.util.Collections.sort(sorted);
    assertEquals(sorted, ids);
  }

  @Test
  @DisplayName("an event over the size limit is refused on its own; the rest of the batch is stored")
  void refusesOversizedEventAlone() {
    String topic = unique("big");
    String consumer = consumer(new JsonObject(), topic);
    String big = "x".repeat((1 << 20) + 1);
    Reply reply = http().publish(topic, events("small", big, "small too"));
    assertEquals(200, reply.status());
    assertEquals("CONFIRMED", reply.results().getJsonObject(0).getString("status"));
    JsonObject refused = reply.results().getJsonObject(1);
    assertEquals("REJECTED", refused.getString("status"));
    assertEquals("MESSAGE_TOO_LARGE", refused.getString("code"));
    assertEquals("CONFIRMED", reply.results().getJsonObject(2).getString("status"));
    assertEquals(2, http().poll(consumer, max(10)).events().size());
  }

  @Test
  @DisplayName("bad topics and bodies are refused whole with the protocol's error and nothing is stored")
  void refusesBadRequests() {
    String topic = unique("bad");
    String consumer = consumer(new JsonObject(), topic);
    Reply badTopic = http().publish(topic + "/*", event(1));
    assertEquals(400, badTopic.status());
    assertEquals("INVALID_REQUEST", badTopic.errorCode());
    assertEquals("topic", badTopic.json().getJsonObject("error").getJsonObject("details").getString("field"));

    Reply system = http().publish("$sys/alerts/unacked", event(1));
    assertEquals(403, system.status());
    assertEquals("PUBLISH_ACL_DENIED", system.errorCode());

    Reply malformed = http().post("/v1/topics/" + topic + "/events", "{\"events\":[{\"payload\":1},{\"nopayload\":2}]}");
    assertEquals(400, malformed.status());
    assertEquals("INVALID_REQUEST", malformed.errorCode());

    Reply notJson = http().post("/v1/topics/" + topic + "/events", "{\"payload\":");
    assertEquals(400, notJson.status());
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("a body over the body limit is refused whole with 413 MESSAGE_TOO_LARGE")
  void refusesOversizedBody() {
    String body = "{\"payload\":\"" + "x".repeat((16 << 20) + 10) + "\"}";
    Reply reply = http().post("/v1/topics/" + unique("huge") + "/events", body);
    assertEquals(413, reply.status());
    assertEquals("MESSAGE_TOO_LARGE", reply.errorCode());
    assertTrue(reply.json().getJsonObject("error").getString("message").contains("limit"));
  }
}
