package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestCluster;
import io.herald.testing.TestNode;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** redis.mode cluster: calls go to the primary of their keys' slot, on a real 3-primary cluster. */
@Timeout(120)
class ClusterIT {
  private static TestCluster cluster;
  private static Vertx vertx;

  @BeforeAll
  static void start() {
    cluster = TestCluster.start();
    vertx = Vertx.vertx();
  }

  @AfterAll
  static void stop() {
    vertx.close().await();
    cluster.close();
  }

  private static JsonObject config() {
    return new JsonObject().put("redis", new JsonObject().put("mode", "cluster").put("endpoints", cluster.endpoints()));
  }

  @Test
  @DisplayName("each command goes to the primary of its key's slot, from one seed")
  void routesBySlot() {
    RedisStore store = RedisStore.pipelined(vertx, RedisTarget.cluster(List.of(cluster.endpoints().getString(0))), 2000);
    try {
      Set<String> primaries = new HashSet<>();
      for (int i = 0; i < 60; i++) {
        String key = "route:" + i;
        store.send(Request.cmd(Command.SET).arg(key).arg(i)).await();
        String primary = cluster.primaryOf(cluster.slotOf(key));
        primaries.add(primary);
        assertEquals(String.valueOf(i), RedisCli.send(primary, Request.cmd(Command.GET).arg(key)).toString());
      }
      assertEquals(3, primaries.size(), "the keys spread over every primary");
    } finally {
      store.close().await();
    }
  }

  @Test
  @DisplayName("consumers on every shard: publish, poll and ack through two nodes")
  void publishPollAckOnEveryShard() {
    try (TestNode a = TestNode.start(config()); TestNode b = TestNode.start(config())) {
      Http http = a.http();
      Set<String> primaries = new HashSet<>();
      List<String> consumers = List.of("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7");
      for (String consumer : consumers) {
        assertEquals(201, http.putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add("orders"))).status());
        primaries.add(cluster.primaryOf(cluster.slotOf("herald:{c:" + consumer + "}:meta")));
      }
      assertEquals(3, primaries.size(), "the consumers spread over every primary");
      for (int i = 0; i < 10; i++) {
        // through the node that made the consumers (the other hears of them over pub/sub, soon after)
        Reply published = a.http().publish("orders", new JsonObject().put("payload", i));
        assertEquals(200, published.status(), published.body());
        assertEquals(consumers.size(), published.results().getJsonObject(0).getInteger("matched"));
      }
      for (String consumer : consumers) {
        Reply poll = b.http().poll(consumer, new JsonObject().put("maxEvents", 100));
        assertEquals(10, poll.events().size(), poll.body());
        Reply acked = a.http().ack(consumer, poll.ackIds().toArray(String[]::new));
        assertTrue(acked.results().stream().allMatch(r -> "ACKED".equals(((JsonObject) r).getString("status"))), acked.body());
        JsonObject metadata = a.http().metadata(consumer).json();
        assertEquals(0, metadata.getInteger("backlog"));
        assertEquals(0, metadata.getInteger("unacked"));
      }
    }
  }
}
