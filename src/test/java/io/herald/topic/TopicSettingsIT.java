package io.herald.topic;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class TopicSettingsIT extends GatewayTest {

  private static Reply putTopic(String topic, JsonObject settings) {
    return http().put("/v1/admin/topics/" + topic, settings);
  }

  /** Waits until node B has heard of the change made through node A. */
  private static void seenByNodeB(String topic, JsonObject settings) {
    await().atMost(Duration.ofSeconds(5)).until(() ->
        nodeB.http().get("/v1/admin/topics/" + topic).json().copy().put("topic", topic)
            .equals(settings.copy().put("topic", topic)));
  }

  @Test
  @DisplayName("PUT stores a topic's settings, defaults filled in; GET on any node and the list show them; DELETE forgets them")
  void adminRoutes() {
    String topic = unique("orders") + "/eu/created";
    Reply put = putTopic(topic, new JsonObject().put("maxEventBytes", 2048).put("namespace", "acme"));
    assertEquals(200, put.status(), put.body());
    JsonObject expected = new JsonObject().put("topic", topic).put("maxEventBytes", 2048).putNull("quotaBytes")
        .put("enabled", true).put("namespace", "acme");
    assertEquals(expected, put.json());
    assertEquals(expected, nodeB.http().get("/v1/admin/topics/" + topic).json());
    JsonArray all = nodeB.http().get("/v1/admin/topics").json().getJsonArray("topics");
    assertTrue(all.contains(expected), all.encode());

    assertEquals(204, http().delete("/v1/admin/topics/" + topic).status());
    assertEquals(new JsonObject().put("topic", topic).putNull("maxEventBytes").putNull("quotaBytes")
        .put("enabled", true).putNull("namespace"), http().get("/v1/admin/topics/" + topic).json());
    assertEquals("NOT_FOUND", http().delete("/v1/admin/topics/" + topic).errorCode());
  }

  @Test
  @DisplayName("bad topic settings and names get 400 naming the field; $sys topics cannot be configured")
  void badSettings() {
    Reply bad = putTopic(unique("t"), new JsonObject().put("maxEventBytes", 0).put("colour", "red"));
    assertEquals(400, bad.status(), bad.body());
    assertEquals("maxEventBytes", bad.json().getJsonObject("error").getJsonObject("details").getString("field"));
    assertEquals(2, bad.json().getJsonObject("error").getJsonObject("details").getJsonArray("errors").size());
    assertEquals("INVALID_REQUEST", putTopic("$sys/alerts/unacked", new JsonObject()).errorCode());
    assertEquals("INVALID_REQUEST", putTopic("a/b*c", new JsonObject()).errorCode());
    assertEquals("INVALID_REQUEST", putTopic(unique("t"), new JsonObject().put("namespace", "a b")).errorCode());
  }

  @Test
  @DisplayName("integer settings must be written as integers: 1e999999 (read as infinity), 1e3 and 1000.0 get 400")
  void integersWrittenAsIntegers() {
    for (String number : new String[] {"1e999999", "1e3", "1000.0", "99999999999999999999"}) {
      String topic = unique("t");
      Reply bad = http().put("/v1/admin/topics/" + topic, "{\"quotaBytes\":" + number + "}");
      assertEquals(400, bad.status(), number + ": " + bad.body());
      assertEquals("quotaBytes", bad.json().getJsonObject("error").getJsonObject("details").getString("field"));
      assertEquals(null, http().get("/v1/admin/topics/" + topic).json().getValue("quotaBytes"), number + " was stored");
    }
  }

  @Test
  @DisplayName("a topic's maxEventBytes refuses larger events per event (scope topic); the others are stored")
  void topicEventSizeLimit() {
    String topic = unique("sized");
    String consumer = consumer(new JsonObject(), topic);
    JsonObject settings = new JsonObject().put("maxEventBytes", 100);
    putTopic(topic, settings);
    seenByNodeB(topic, TopicSettings.parse(topic, settings).toJson());
    JsonObject request = events("x".repeat(200), "small");
    for (Reply reply : new Reply[] {http().publish(topic, request), nodeB.http().publish(topic, request)}) {
      JsonObject refused = reply.results().getJsonObject(0);
      assertEquals("REJECTED", refused.getString("status"));
      assertEquals("MESSAGE_TOO_LARGE", refused.getString("code"));
      assertEquals(new JsonObject().put("scope", "topic").put("limit", 100).put("topic", topic), refused.getJsonObject("details"));
      assertEquals("CONFIRMED", reply.results().getJsonObject(1).getString("status"));
    }
    assertEquals(2, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("publishing to a disabled topic is refused whole with 409 TOPIC_DISABLED, over HTTP and WebSocket; nothing is stored")
  void disabledTopic() {
    String topic = unique("off");
    String consumer = consumer(new JsonObject(), topic);
    JsonObject settings = new JsonObject().put("enabled", false);
    putTopic(topic, settings);
    seenByNodeB(topic, TopicSettings.parse(topic, settings).toJson());
    for (TestNode node : new TestNode[] {nodeA, nodeB}) {
      Reply refused = node.http().publish(topic, events(1, 2));
      assertEquals(409, refused.status());
      assertEquals("TOPIC_DISABLED", refused.errorCode());
    }
    try (TestSocket socket = TestSocket.connect(nodeA.port(), "/v1/ws/publish")) {
      socket.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", "r1")
          .put("events", new JsonArray().add(event(1))));
      JsonObject answer = socket.next();
      assertEquals("error", answer.getString("type"), answer.encode());
      assertEquals("TOPIC_DISABLED", answer.getString("code"));
      assertEquals(409, answer.getInteger("status"));
    }
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
    putTopic(topic, new JsonObject());
    assertEquals("CONFIRMED", http().publish(topic, event(3)).results().getJsonObject(0).getString("status"));
  }
}
