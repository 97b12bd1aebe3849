package io.herald.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class PublishIT extends GatewayTest {

  @Test
  @DisplayName("a topic with an empty level is refused with 400 naming it, for publishing and administration, and nothing is stored")
  void emptyTopicLevelRefused() {
    String base = unique("levels");
    String consumer = consumer(new JsonObject(), base + "/>");
    for (String path : List.of("/v1/topics/" + base + "//b/events", "/v1/topics/" + base + "/b//events")) {
      Reply refused = http().post(path, event(1));
      assertEquals(400, refused.status(), path + ": " + refused.body());
      assertEquals("INVALID_REQUEST", refused.errorCode());
      assertTrue(refused.json().getJsonObject("error").getString("message").contains("empty level"), refused.body());
    }
    Reply admin = http().put("/v1/admin/topics/" + base + "//b", new JsonObject().put("enabled", false));
    assertEquals(400, admin.status(), admin.body());
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
    assertEquals(1, http().publish(base + "/b", event(1)).results().getJsonObject(0).getInteger("matched"));
  }

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
  @DisplayName("concurrent publishes each reach exactly their consumers; each publisher's events come in its order")
  void concurrentPublishes() throws Exception {
    String level = unique("concurrent");
    JsonObject roomy = new JsonObject().put("maxPollRecords", 1000).put("maxUnacked", 5000);
    String onlyA = consumer(roomy, level + "/a");
    String both = consumer(roomy, level + "/>");
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Future<List<String>>> publishers = new ArrayList<>();
    for (int t = 0; t < 8; t++) {
      String topic = level + (t % 2 == 0 ? "/a" : "/b");
      int matched = t % 2 == 0 ? 2 : 1;
      publishers.add(pool.submit(() -> {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          JsonObject result = http().publish(topic, event(i)).results().getJsonObject(0);
          assertEquals(matched, result.getInteger("matched"));
          ids.add(result.getString("eventId"));
        }
        return ids;
      }));
    }
    List<List<String>> sequences = new ArrayList<>();
    for (Future<List<String>> publisher : publishers) {
      sequences.add(publisher.get());
    }
    pool.shutdown();
    List<String> receivedA = http().poll(onlyA, max(1000)).eventIds();
    List<String> receivedBoth = http().poll(both, max(1000)).eventIds();
    for (int t = 0; t < sequences.size(); t++) {
      List<String> sent = sequences.get(t);
      List<String> sorted = new ArrayList<>(sent);
      Collections.sort(sorted);
      assertEquals(sorted, sent, "a publisher's eventIds sort in its publish order");
      assertEquals(sent, receivedBoth.stream().filter(sent::contains).toList());
      assertEquals(t % 2 == 0 ? sent : List.of(), receivedA.stream().filter(sent::contains).toList());
    }
    assertEquals(400, receivedBoth.size());
    assertEquals(200, receivedA.size());
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
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      ids.add(http().publish(topic, events(i, i)).results().getJsonObject(0).getString("eventId"));
      ids.add(http().publish(topic, events(i, i)).results().getJsonObject(1).getString("eventId"));
    }
    List<String> sorted = new java.util.ArrayList<>(ids);
    Collections.sort(sorted);
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

  @Test
  @DisplayName("a body that is not strict UTF-8 (here an encoded surrogate a JSON parser lets through) is refused with 400 naming it, and nothing is stored")
  void invalidUtf8Refused() {
    String topic = unique("utf8");
    String consumer = consumer(new JsonObject(), topic);
    byte[] start = "{\"payload\":\"".getBytes(StandardCharsets.UTF_8);
    byte[] body = Arrays.copyOf(start, start.length + 5);
    body[start.length] = (byte) 0xED;
    body[start.length + 1] = (byte) 0xA0;
    body[start.length + 2] = (byte) 0x80;
    body[start.length + 3] = '"';
    body[start.length + 4] = '}';
    Reply refused = http().sendBytes("POST", "/v1/topics/" + topic + "/events", body);
    assertEquals(400, refused.status(), refused.body());
    assertEquals("INVALID_REQUEST", refused.errorCode());
    assertEquals("body", refused.json().getJsonObject("error").getJsonObject("details").getString("field"), refused.body());
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("any other request body that is not strict UTF-8 is refused too: an overlong 'I' does not make batchAckIds")
  void overlongUtf8Refused() {
    String consumer = consumer(new JsonObject(), unique("utf8"));
    byte[] body = "{\"batchAck\u0000\u0000ds\":[\"00\"]}".getBytes(StandardCharsets.UTF_8);
    int at = "{\"batchAck".length();
    body[at] = (byte) 0xC1;
    body[at + 1] = (byte) 0x89;
    Reply refused = http().sendBytes("POST", "/v1/consumers/" + consumer + "/acks", body);
    assertEquals(400, refused.status(), refused.body());
    assertEquals("body", refused.json().getJsonObject("error").getJsonObject("details").getString("field"), refused.body());
  }
}
