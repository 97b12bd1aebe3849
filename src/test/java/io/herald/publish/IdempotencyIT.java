package io.herald.publish;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.NodeConfig;
import io.herald.testing.RedisCli;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
@NodeConfig("""
    {"publish": {"idempotencyWindowMs": 3000}, "quotas": {"syncMs": 100}}""")
class IdempotencyIT extends GatewayTest {

  private static JsonObject keyed(Object payload, String idempotencyKey) {
    return event(payload).put("idempotencyKey", idempotencyKey);
  }

  private static JsonObject publish(String topic, JsonObject event) {
    return http().publish(topic, event).results().getJsonObject(0);
  }

  @Test
  @DisplayName("a repeated idempotencyKey on a topic, through any node, answers the first eventId with duplicate:true and stores nothing")
  void repeatIsNotStoredAgain() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    JsonObject first = publish(topic, keyed(1, "order-42").put("correlationId", "a"));
    assertEquals("CONFIRMED", first.getString("status"));
    assertNull(first.getValue("duplicate"));
    JsonObject again = nodeB.http().publish(topic, keyed(2, "order-42").put("correlationId", "b")).results().getJsonObject(0);
    assertEquals(new JsonObject().put("index", 0).put("status", "CONFIRMED").put("eventId", first.getString("eventId"))
        .put("matched", 1).put("duplicate", true).put("correlationId", "b"), again);
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
    assertEquals(1, http().poll(consumer, max(10)).json().getJsonArray("events").getJsonObject(0).getInteger("payload"));

    // the same key on another topic is another event
    String otherTopic = unique("orders");
    assertNotEquals(first.getString("eventId"), publish(otherTopic, keyed(3, "order-42")).getString("eventId"));
  }

  @Test
  @DisplayName("within one request a repeated key is a duplicate of the event before it")
  void repeatWithinOneRequest() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    JsonArray results = http().publish(topic, new JsonObject().put("events",
        new JsonArray().add(keyed(1, "x")).add(keyed(2, "y")).add(keyed(3, "x")))).results();
    assertEquals(results.getJsonObject(0).getString("eventId"), results.getJsonObject(2).getString("eventId"));
    assertTrue(results.getJsonObject(2).getBoolean("duplicate"));
    assertFalse(results.getJsonObject(1).containsKey("duplicate"));
    assertEquals(2, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("after the dedup window the same key publishes a new event")
  void windowEnds() {
    String topic = unique("orders");
    String first = publish(topic, keyed(1, "k")).getString("eventId");
    assertTrue(publish(topic, keyed(1, "k")).getBoolean("duplicate"));
    await().atMost(Duration.ofSeconds(10)).until(() -> !publish(topic, keyed(1, "k")).containsKey("duplicate"));
    assertNotEquals(first, publish(topic, keyed(1, "k")).getString("eventId"));
  }

  @Test
  @DisplayName("a retry of a publish whose outcome was never known spools the claimed eventId (once), and later repeats do not")
  void retryAfterUnknownOutcome() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    // what a node that died after claiming the key, before or after spooling, leaves behind
    long claimedAt = RedisCli.millis(redis.url()) - 1000;
    String claimedId = String.format("%012x-00000000000000ff", claimedAt);
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg("herald:{t:" + topic + "}:idem:lost")
        .arg("P " + claimedId).arg("PX").arg(60_000));
    JsonObject retried = publish(topic, keyed("payload", "lost"));
    assertEquals(claimedId, retried.getString("eventId"));
    assertTrue(retried.getBoolean("duplicate"));
    assertEquals(1, retried.getInteger("matched"));
    JsonObject delivered = http().poll(consumer, max(10)).events().getJsonObject(0);
    assertEquals(claimedId, delivered.getString("eventId"));
    assertEquals(claimedAt, delivered.getLong("publishedAt"));
    assertEquals(1, publish(topic, keyed("payload", "lost")).getInteger("matched"));
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
    assertEquals(1, http().metadata(consumer).json().getLong("unacked"));
  }

  @Test
  @DisplayName("a retry of a publish that was stored but never settled does not store the event twice")
  void retryOfStoredPublish() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publish(topic, keyed(1, "stored")).getString("eventId");
    // the node died after spooling, before recording that it had
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg("herald:{t:" + topic + "}:idem:stored")
        .arg("P " + eventId).arg("XX").arg("KEEPTTL"));
    assertEquals(eventId, publish(topic, keyed(1, "stored")).getString("eventId"));
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("a retry of a publish of unknown outcome never spools the event again for a consumer that already acked it")
  void retryAfterAckDoesNotRedeliver() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = publish(topic, keyed(1, "acked")).getString("eventId");
    // the answer was lost: the node died after spooling, before recording that it had
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg("herald:{t:" + topic + "}:idem:acked")
        .arg("P " + eventId).arg("XX").arg("KEEPTTL"));
    Http.Reply batch = http().poll(consumer, max(10));
    assertEquals(List.of(eventId), batch.eventIds());
    assertEquals("ACKED", http().ack(consumer, batch.ackIds().get(0)).results().getJsonObject(0).getString("status"));

    JsonObject retried = publish(topic, keyed(1, "acked"));
    assertEquals(eventId, retried.getString("eventId"));
    assertTrue(retried.getBoolean("duplicate"));
    assertEquals(1, retried.getInteger("matched"));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("backlog"));
    assertEquals(1, metadata.getJsonObject("totals").getLong("published"));
    assertEquals(List.of(), http().poll(consumer, max(10)).eventIds());
  }

  @Test
  @DisplayName("an event refused by a quota leaves its key free: the retry is a new publish")
  void refusedEventLeavesKeyFree() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject().put("quotaEvents", 1), topic);
    publish(topic, keyed(1, "one"));
    assertEquals("QUOTA_EXCEEDED", publish(topic, keyed(2, "two")).getString("code"));
    http().ack(consumer, http().poll(consumer, max(1)).ackIds().get(0));
    await().atMost(Duration.ofSeconds(5)).until(() -> "CONFIRMED".equals(publish(topic, keyed(2, "two")).getString("status")));
    assertEquals(2, http().poll(consumer, max(10)).events().getJsonObject(0).getInteger("payload"));
  }
}
