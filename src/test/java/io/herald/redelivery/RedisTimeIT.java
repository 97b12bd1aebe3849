package io.herald.redelivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class RedisTimeIT extends GatewayTest {


  @Test
  @DisplayName("every node stamps, orders and times out events on Redis' clock, never its own")
  void nodesAgreeOnRedisTime() {
    String topic = unique("time");
    JsonObject settings = new JsonObject().put("topics", new JsonArray().add(topic)).put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0));
    String consumer = unique("c");
    assertEquals(201, nodeA.http().putConsumer(consumer, settings).status());

    List<String> published = new ArrayList<>();
    List<String> throughA = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      TestNode node = i % 2 == 0 ? nodeA : nodeB;
      long stampedAfter = RedisCli.millis(redis.url());
      String eventId = node.http().publish(topic, new JsonObject().put("payload", i)).results().getJsonObject(0)
          .getString("eventId");
      long stampedBefore = RedisCli.millis(redis.url());
      // made on the node from its reading of Redis' clock (to within a few ms on this busy machine)
      long stamp = Long.parseLong(eventId.substring(0, 12), 16);
      assertTrue(stamp >= stampedAfter - 5 && stamp <= stampedBefore + 5,
          stampedAfter + " <= " + stamp + " <= " + stampedBefore);
      published.add(eventId);
      if (node == nodeA) {
        throughA.add(eventId);
      }
    }
    List<String> sorted = new ArrayList<>(throughA);
    sorted.sort(null);
    assertEquals(throughA, sorted, "eventIds of one node sort in publish order");

    long before = RedisCli.millis(redis.url());
    Reply batch = nodeB.http().poll(consumer, new JsonObject().put("maxEvents", 10));
    long after = RedisCli.millis(redis.url());
    assertEquals(published, batch.eventIds());
    for (Object item : batch.events()) {
      JsonObject event = (JsonObject) item;
      long publishedAt = event.getLong("publishedAt");
      assertTrue(Math.abs(publishedAt - before) < 10_000, "publishedAt on Redis' clock: " + (publishedAt - before));
      long deadline = event.getLong("ackDeadline");
      assertTrue(deadline >= before + 5000 && deadline <= after + 5000, "deadline = Redis now + ackTimeoutMs");
    }

    // redelivered after ackTimeoutMs by Redis' clock: not at once, not late
    await().atLeast(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(250))
        .until(() -> nodeA.http().metadata(consumer).json().getLong("stale") == 10);
    Reply again = nodeA.http().poll(consumer, new JsonObject().put("maxEvents", 10));
    // one deadline and backoff for all ten: they became ready together, so they go in eventId order
    // (publish order, but for two published in the same millisecond through different nodes)
    List<String> byEventId = new ArrayList<>(published);
    byEventId.sort(null);
    assertEquals(byEventId, again.eventIds());
    assertEquals(2, again.events().getJsonObject(0).getInteger("deliveryCount"));
  }
}
