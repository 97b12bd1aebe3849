package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.redelivery.DueIndex;
import io.herald.testing.Http.Reply;
import io.herald.testing.LoadRun;
import io.herald.testing.Places;
import io.herald.testing.TestCluster;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults of a Redis Cluster under load, each test on a cluster of its own (3 primaries, 3
 * replicas): nothing confirmed is lost, no event ends in two places, none is acked twice.
 */
@Timeout(180)
class ClusterFaultsIT {
  private static final String TOPIC = "orders";
  private static final String CONSUMER = "billing";

  private static JsonObject config(TestCluster cluster, int waitReplicas) {
    return new JsonObject().put("redis", new JsonObject().put("mode", "cluster").put("endpoints", cluster.endpoints())
        .put("waitReplicas", waitReplicas));
  }

  private static JsonObject config(TestCluster cluster, int waitReplicas, long timeoutMs) {
    JsonObject config = config(cluster, waitReplicas);
    config.getJsonObject("redis").put("timeoutMs", timeoutMs);
    return config;
  }

  @Test
  @DisplayName("kill -9 of the consumer's primary under publish and consume load, waitReplicas 1: nothing confirmed lost")
  void primaryCrashUnderLoad() {
    try (TestCluster cluster = TestCluster.start();
        TestNode a = TestNode.start(config(cluster, 1));
        TestNode b = TestNode.start(config(cluster, 1))) {
      assertEquals(201, a.http().putConsumer(CONSUMER, LoadRun.consumerSettings(TOPIC)).status());
      int slot = cluster.slotOf("herald:{c:" + CONSUMER + "}:meta");
      LoadRun load = LoadRun.start(a.http(), TOPIC, b.http(), CONSUMER);
      load.awaitAcked(500);
      String old = cluster.primaryOf(slot);
      long struck = System.nanoTime();
      String promoted = cluster.killPrimaryOf(slot);
      long failedOverMs = (System.nanoTime() - struck) / 1_000_000;
      assertNotEquals(old, promoted);
      // the shard has no replica left for waitReplicas 1 until the old primary rejoins as one
      cluster.restart(old);
      load.awaitConfirmed(1000);
      load.stop();
      System.out.printf("cluster, kill -9 of a primary under load, waitReplicas 1: replica promoted after %d ms;"
          + " publishing stopped for %d ms at most (the old primary restarted as a replica in between);"
          + " %d events confirmed, %d acked%n", failedOverMs, load.longestGapMs(), load.confirmed.size(), load.acked.size());
      assertEverythingInOnePlace(cluster, load, a);
    }
  }

  @Test
  @DisplayName("a busy consumer's slot migrated to another primary while it is polled and acked: retries, no errors; nothing lost or duplicated")
  void slotMigrationUnderLoad() {
    // the default call timeout: the consumer's calls are retried (ASK, then TRYAGAIN) until the migration ends
    try (TestCluster cluster = TestCluster.start();
        TestNode a = TestNode.start(config(cluster, 0, 5000));
        TestNode b = TestNode.start(config(cluster, 0, 5000))) {
      assertEquals(201, a.http().putConsumer(CONSUMER, LoadRun.consumerSettings(TOPIC)).status());
      int slot = cluster.slotOf("herald:{c:" + CONSUMER + "}:meta");
      LoadRun load = LoadRun.start(a.http(), TOPIC, b.http(), CONSUMER);
      load.awaitAcked(300);
      String source = cluster.primaryOf(slot);
      String target = cluster.primaries().stream().filter(p -> !p.equals(source)).findFirst().orElseThrow();
      int[] steps = {0};
      long started = System.nanoTime();
      cluster.migrate(slot, target, () -> steps[0]++);
      long migrationMs = (System.nanoTime() - started) / 1_000_000;
      assertEquals(target, cluster.primaryOf(slot));
      load.awaitAcked(300);
      load.stop();
      System.out.printf("cluster, slot %d migrated in %d MIGRATE steps (%d ms) under load: %d events confirmed, %d acked,"
          + " %d requests refused%n", slot, steps[0], migrationMs, load.confirmed.size(), load.acked.size(), load.failures.size());
      assertEquals(List.of(), load.failures, "requests refused during the migration");
      assertEverythingInOnePlace(cluster, load, a);
    }
  }

  @Test
  @DisplayName("one primary hung with its replica (nobody serves its slots): consumers and due-index shards on the other primaries go on, deadlines redelivered")
  void primaryAndReplicaHung() {
    try (TestCluster cluster = TestCluster.start();
        TestNode a = TestNode.start(config(cluster, 0))) {
      String hung = cluster.primaryOf(0);
      DueIndex index = new DueIndex(DueIndex.CLUSTER_SHARDS);
      // one consumer on the primary that hangs; one whose keys and due-index shard are elsewhere
      String stuck = null;
      String going = null;
      for (int n = 0; stuck == null || going == null; n++) {
        String name = "c" + n;
        boolean onHung = cluster.primaryOf(cluster.slotOf("herald:{c:" + name + "}:meta")).equals(hung);
        boolean dueOnHung = cluster.primaryOf(cluster.slotOf(index.keysOf(name).get(0))).equals(hung);
        if (onHung && stuck == null) {
          stuck = name;
        } else if (!onHung && !dueOnHung && going == null) {
          going = name;
        }
      }
      JsonObject settings = new JsonObject().put("ackTimeoutMs", 5000).put("redelivery", new JsonObject().put("initialDelayMs", 0));
      assertEquals(201, a.http().putConsumer(stuck, settings.copy().put("topics", new JsonArray().add("stuck"))).status());
      assertEquals(201, a.http().putConsumer(going, settings.copy().put("topics", new JsonArray().add("going"))).status());

      cluster.hangShardOf(0);
      // still ready: every node would be alike, and taking them all out of service would stop every shard
      assertEquals(200, a.http().get("/health/ready").status());
      assertEquals(503, a.http().publish("stuck", new JsonObject().put("payload", 1)).status());
      Reply published = a.http().publish("going", new JsonObject().put("payload", 2));
      assertEquals(200, published.status(), published.body());
      Reply first = a.http().poll(going, new JsonObject());
      assertEquals(1, first.eventIds().size(), first.body());
      // not acked: its deadline passes, and the scheduler's shard of it (on a live primary) ticks
      Reply again = a.http().poll(going, new JsonObject().put("waitMs", 20_000));
      assertEquals(first.eventIds(), again.eventIds(), again.body());
      assertEquals(2, again.events().getJsonObject(0).getInteger("deliveryCount"));
      assertEquals("ACKED", a.http().ack(going, again.ackIds().get(0)).results().getJsonObject(0).getString("status"));
    }
  }

  private static void assertEverythingInOnePlace(TestCluster cluster, LoadRun load, TestNode node) {
    String primary = cluster.primaryOf(cluster.slotOf("herald:{c:" + CONSUMER + "}:meta"));
    Set<String> settled = new HashSet<>(load.confirmed);
    settled.removeAll(load.maybeAcked);
    for (String eventId : settled) {
      assertEquals(!load.acked.contains(eventId), Places.holds(primary, CONSUMER, eventId),
          "confirmed event " + eventId + " is held unless acked");
    }
    assertEquals(0, Places.misplaced(primary, CONSUMER), "events held in none or several places");
    assertTrue(load.ackedAgain.isEmpty(), "acked twice: " + load.ackedAgain);
    load.drain(node.http(), CONSUMER);
    Set<String> lost = new HashSet<>(load.confirmed);
    lost.removeAll(load.received);
    assertTrue(lost.isEmpty(), "confirmed, never delivered: " + lost);
    assertTrue(load.ackedAgain.isEmpty(), "acked twice: " + load.ackedAgain);
  }
}
