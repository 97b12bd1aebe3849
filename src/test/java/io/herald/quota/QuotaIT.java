package io.herald.quota;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
@NodeConfig("""
    {"quotas": {"syncMs": 100, "namespaces": {"acme": {"quotaBytes": 2000}, "tight": {"quotaBytes": 1000},
      "roomy": {"quotaBytes": 1000000}}}}""")
class QuotaIT extends GatewayTest {
  private static final String PAYLOAD = "x".repeat(300);

  private static JsonObject stats() {
    return http().get("/v1/admin/stats").json();
  }

  private static JsonObject publishOne(String topic) {
    return http().publish(topic, event(PAYLOAD)).results().getJsonObject(0);
  }

  /** Publishes one event at a time until one is refused; returns that refusal. */
  private static JsonObject publishUntilRefused(String... topics) {
    for (int i = 0; i < 1000; i++) {
      JsonObject result = publishOne(topics[i % topics.length]);
      if (!"CONFIRMED".equals(result.getString("status"))) {
        return result;
      }
    }
    throw new AssertionError("never refused");
  }

  private static void ackEverything(String consumer) {
    List<String> ackIds;
    do {
      ackIds = http().poll(consumer, max(1000)).ackIds();  // at most the consumer's maxPollRecords
      if (!ackIds.isEmpty()) {
        assertEquals(200, http().ack(consumer, ackIds.toArray(String[]::new)).status());
      }
    } while (!ackIds.isEmpty());
  }

  @Test
  @DisplayName("a consumer's quotaEvents refuses the events beyond it for every consumer (scope consumer); acks make room again")
  void consumerQuotaRefusesForAll() {
    String topic = unique("orders");
    String limited = consumer(new JsonObject().put("quotaEvents", 3), topic);
    String other = consumer(new JsonObject(), topic);
    JsonArray results = http().publish(topic, events(1, 2, 3, 4, 5)).results();
    for (int i = 0; i < 3; i++) {
      assertEquals("CONFIRMED", results.getJsonObject(i).getString("status"));
      assertEquals(2, results.getJsonObject(i).getInteger("matched"));
    }
    for (int i = 3; i < 5; i++) {
      JsonObject refused = results.getJsonObject(i);
      assertEquals("REJECTED", refused.getString("status"));
      assertEquals("QUOTA_EXCEEDED", refused.getString("code"));
      assertEquals(new JsonObject().put("scope", "consumer").put("consumer", limited), refused.getJsonObject("details"));
    }
    assertEquals(3, http().metadata(other).json().getLong("backlog"));
    assertEquals(3, http().metadata(limited).json().getLong("spooledEvents"));

    List<String> ackIds = http().poll(limited, max(1)).ackIds();
    http().ack(limited, ackIds.get(0));
    // the ledger hears of the ack within syncMs
    await().atMost(Duration.ofSeconds(5)).until(() -> "CONFIRMED".equals(publishOne(topic).getString("status")));
    assertEquals("QUOTA_EXCEEDED", publishOne(topic).getString("code"));
  }

  @Test
  @DisplayName("a full consumer with rejectPublishWhenRefused false skips events (counted as discarded); the others get them")
  void fullConsumerSkips() {
    String topic = unique("orders");
    String limited = consumer(new JsonObject().put("quotaEvents", 2).put("rejectPublishWhenRefused", false), topic);
    String other = consumer(new JsonObject(), topic);
    JsonArray results = http().publish(topic, events(1, 2, 3, 4)).results();
    List<Integer> matched = new ArrayList<>();
    results.forEach(r -> matched.add(((JsonObject) r).getInteger("matched")));
    assertEquals(List.of(2, 2, 1, 1), matched);
    assertEquals(4, http().metadata(other).json().getLong("backlog"));
    JsonObject metadata = http().metadata(limited).json();
    assertEquals(2, metadata.getLong("backlog"));
    assertEquals(2, metadata.getJsonObject("totals").getLong("discarded"));
  }

  @Test
  @DisplayName("a topic's quotaBytes counts every consumer's copy and refuses beyond it (scope topic); acks give it back")
  void topicQuota() {
    String topic = unique("metered");
    assertEquals(200, http().put("/v1/admin/topics/" + topic, new JsonObject().put("quotaBytes", 3000)).status());
    String first = consumer(new JsonObject(), topic);
    String second = consumer(new JsonObject(), topic);
    // node A publishes: it stored the setting, so it knows of the quota already
    JsonObject refused = publishUntilRefused(topic);
    assertEquals("QUOTA_EXCEEDED", refused.getString("code"));
    assertEquals(new JsonObject().put("scope", "topic").put("topic", topic), refused.getJsonObject("details"));
    JsonObject firstSpool = http().metadata(first).json();
    long copy = firstSpool.getLong("spooledBytes") / firstSpool.getLong("spooledEvents");
    long used = stats().getJsonObject("chargedTopics").getJsonObject(topic).getLong("usedBytes");
    assertEquals(2 * firstSpool.getLong("spooledBytes"), used);
    // refused exactly when the next event's two copies did not fit
    assertTrue(used <= 3000 && used + 2 * copy > 3000, "used " + used + ", copy " + copy);

    ackEverything(first);
    ackEverything(second);
    await().atMost(Duration.ofSeconds(5)).until(() -> !stats().getJsonObject("chargedTopics").containsKey(topic));
    assertEquals("CONFIRMED", publishOne(topic).getString("status"));
  }

  @Test
  @DisplayName("a namespace's quota counts the spools of all its consumers (scope namespace)")
  void namespaceQuota() {
    String topicA = unique("a");
    String topicB = unique("b");
    consumer(new JsonObject().put("namespace", "acme"), topicA);
    consumer(new JsonObject().put("namespace", "acme"), topicB);
    JsonObject refused = publishUntilRefused(topicA, topicB);
    assertEquals(new JsonObject().put("scope", "namespace").put("namespace", "acme"), refused.getJsonObject("details"));
    JsonObject acme = stats().getJsonObject("namespaces").getJsonObject("acme");
    assertEquals(2000, acme.getLong("quotaBytes"));
    assertTrue(acme.getLong("usedBytes") <= 2000 && acme.getLong("usedBytes") > 1000, acme.encode());
  }

  @Test
  @DisplayName("spooled bytes and events return exactly to zero after thousands of events are acked, dead-lettered, rejected, expired and redriven")
  void countersReturnToZero() {
    String topic = unique("lifecycle");
    http().put("/v1/admin/topics/" + topic, new JsonObject().put("quotaBytes", 1L << 40));
    String consumer = consumer(new JsonObject().put("namespace", "zero").put("maxUnacked", 100_000).put("maxPollRecords", 1000)
        .put("redelivery", new JsonObject().put("maxDeliveries", 1))
        .put("rateLimit", new JsonObject().put("tps", 100_000)), topic);
    int batches = 4;
    for (int b = 0; b < batches; b++) {
      JsonArray events = new JsonArray();
      for (int i = 0; i < 1000; i++) {
        JsonObject event = event("event " + b + "/" + i);
        if (b == 3) {
          event.put("ttlMs", 1000); // expires, then is dead-lettered as TTL_EXPIRED
        }
        events.add(event);
      }
      Reply published = http().publish(topic, new JsonObject().put("events", events));
      assertEquals(200, published.status());
    }
    assertEquals(4000, http().metadata(consumer).json().getLong("spooledEvents"));
    settle(consumer, "ack", 1000);
    settle(consumer, "REQUEUE", 1000); // maxDeliveries 1: to the dead-letter queue
    settle(consumer, "REJECT", 1000); // to the error queue
    await().atMost(Duration.ofSeconds(20)).until(() -> http().metadata(consumer).json().getLong("deadLetters") == 2000);
    assertEquals(0, http().metadata(consumer).json().getLong("spooledEvents"));

    // redriven events come back into the spool, then are acked
    http().post("/v1/consumers/" + consumer + "/dead-letters/redrive", new JsonObject().put("all", true));
    http().post("/v1/consumers/" + consumer + "/errors/redrive", new JsonObject().put("all", true));
    assertEquals(3000, http().metadata(consumer).json().getLong("spooledEvents"));
    ackEverything(consumer);

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("spooledBytes"));
    assertEquals(0, metadata.getLong("spooledEvents"));
    await().atMost(Duration.ofSeconds(5)).until(() -> {
      JsonObject stats = stats();
      return !stats.getJsonObject("chargedTopics").containsKey(topic)
          && !stats.getJsonObject("namespaces").containsKey("zero");
    });
  }

  @Test
  @DisplayName("a deleted consumer's spool leaves the ledger; a consumer created again under its name starts from zero")
  void deletedConsumerLeavesLedger() {
    String topic = unique("short-lived");
    String consumer = consumer(new JsonObject().put("namespace", "transient").put("quotaEvents", 5), topic);
    http().publish(topic, events(1, 2, 3));
    await().atMost(Duration.ofSeconds(5)).until(() ->
        stats().getJsonObject("namespaces").getJsonObject("transient", new JsonObject()).getLong("usedBytes", 0L) > 0);
    assertEquals(204, http().delete("/v1/admin/consumers/" + consumer).status());
    await().atMost(Duration.ofSeconds(5)).until(() -> !stats().getJsonObject("namespaces").containsKey("transient"));

    http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(topic)).put("quotaEvents", 5));
    JsonArray results = http().publish(topic, events(1, 2, 3, 4, 5)).results();
    results.forEach(r -> assertEquals("CONFIRMED", ((JsonObject) r).getString("status"), results.encode()));
  }

  /** Polls 1000 events and acks them ("ack") or nacks them with that action. */
  private static void settle(String consumer, String how, int count) {
    Reply batch = http().poll(consumer, max(count));
    assertEquals(count, batch.ackIds().size());
    JsonArray ackIds = new JsonArray(batch.ackIds());
    Reply reply = how.equals("ack")
        ? http().post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("ackIds", ackIds))
        : http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject().put("ackIds", ackIds).put("action", how));
    assertEquals(200, reply.status(), reply.body());
  }

  @Test
  @DisplayName("an event refused for all by one consumer's namespace holds no room for another consumer once the publish is answered (on a cluster, their ledger shards differ)")
  void refusedEventsHoldNoRoom() {
    String topic = unique("held");
    String tight = unique("c");
    String roomy = unique("c");
    while (SpoolLedger.shardOf(roomy, SpoolLedger.CLUSTER_SHARDS) == SpoolLedger.shardOf(tight, SpoolLedger.CLUSTER_SHARDS)) {
      roomy = unique("c");
    }
    assertEquals(201, http().putConsumer(tight, new JsonObject().put("namespace", "tight")
        .put("topics", new JsonArray().add(topic))).status());
    assertEquals(201, http().putConsumer(roomy, new JsonObject().put("namespace", "roomy")
        .put("topics", new JsonArray().add(topic))).status());
    JsonObject refused = publishUntilRefused(topic);
    assertEquals(new JsonObject().put("scope", "namespace").put("namespace", "tight"), refused.getJsonObject("details"));
    long spooled = http().metadata(roomy).json().getLong("spooledBytes");
    // the room the roomy consumer's shard held for the refused event is given back with the round,
    // not when its hold lapses (10 s)
    await().atMost(Duration.ofSeconds(3)).untilAsserted(() -> assertEquals(spooled,
        stats().getJsonObject("namespaces").getJsonObject("roomy").getLong("usedBytes")));
  }
}
