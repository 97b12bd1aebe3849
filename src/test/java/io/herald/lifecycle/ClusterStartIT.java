package io.herald.lifecycle;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http.Reply;
import io.herald.testing.TestCluster;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A node's start and readiness beside a Redis Cluster whose primaries do not all serve. */
@Timeout(120)
class ClusterStartIT {
  private static JsonObject on(TestCluster cluster) {
    return new JsonObject().put("redis", new JsonObject().put("mode", "cluster").put("endpoints", cluster.endpoints()));
  }

  @Test
  @DisplayName("a node started beside a cluster just created (its primaries refuse calls with keys for their first seconds) waits for it, then serves its first clients")
  void startWaitsForANewCluster() {
    try (TestCluster cluster = TestCluster.forming();
        // calls that time out long before the cluster serves: a start that did not wait would fail
        TestNode node = TestNode.start(on(cluster).put("redis", on(cluster).getJsonObject("redis").put("timeoutMs", 300)))) {
      assertTrue(cluster.primariesServe(), "the node listens before the cluster serves");
      assertEquals(200, node.http().get("/health/ready").status());
      // consumers spread over the shards, each served at once
      for (int i = 0; i < 6; i++) {
        String name = "first-" + i;
        assertEquals(201, node.http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add(name))).status());
        Reply published = node.http().publish(name, new JsonObject().put("events",
            new JsonArray().add(new JsonObject().put("payload", i))));
        assertEquals(200, published.status(), published.body());
        Reply polled = node.http().poll(name, new JsonObject().put("maxEvents", 1));
        assertEquals(1, polled.events().size(), polled.body());
      }
    }
  }

  @Test
  @DisplayName("a node is not ready while no primary that answers serves (one left in a minority: it refuses calls with keys), though it answers PING")
  void notReadyWhileNoPrimaryServes() {
    try (TestCluster cluster = TestCluster.start(); TestNode node = TestNode.start(on(cluster))) {
      assertEquals(200, node.http().get("/health/ready").status());
      int[] shardSlots = {0, 16383};
      for (int slot : shardSlots) {
        cluster.hangShardOf(slot);
      }
      await().atMost(Duration.ofSeconds(30)).until(() -> node.http().get("/health/ready").status() == 503);
      assertEquals("STORE_UNAVAILABLE", node.http().get("/health/ready").errorCode());
    }
  }
}
