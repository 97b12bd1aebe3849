package io.herald.store;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.LoadRun;
import io.herald.testing.Places;
import io.herald.testing.TestNode;
import io.herald.testing.TestSentinels;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * redis.mode sentinel: nodes find the primary through the sentinels, and find the new one by
 * themselves after a failover, without a restart.
 */
@Timeout(180)
class SentinelIT {
  private static final String TOPIC = "orders";

  private static JsonObject config(TestSentinels set) {
    return new JsonObject().put("redis", new JsonObject().put("mode", "sentinel")
        .put("endpoints", set.endpoints()).put("masterName", TestSentinels.MASTER));
  }

  @Test
  @DisplayName("a failover (the primary demoted to a replica) is followed by both nodes within seconds; nothing replicated is lost")
  void followsAFailover() {
    runThrough("SENTINEL FAILOVER", TestSentinels.start(), TestSentinels::failover);
  }

  @Test
  @DisplayName("on Redis 6.2 (no functions: scripts go by SHA, and are sent again to the new primary) a failover is followed too")
  void followsAFailoverOnRedis62() {
    runThrough("SENTINEL FAILOVER, Redis 6.2", TestSentinels.start(RedisProcess.embeddedExecutable()), TestSentinels::failover);
  }

  @Test
  @DisplayName("a crash of the primary (kill -9) is followed once the sentinels promote a replica; nothing replicated is lost")
  void followsACrashedPrimary() {
    runThrough("kill -9 of the primary", TestSentinels.start(), TestSentinels::killPrimary);
  }

  @Test
  @DisplayName("kill -9 of the primary under publish and consume load, waitReplicas 1: nothing confirmed lost, every event in one place")
  void crashUnderLoadLosesNothingConfirmed() {
    try (TestSentinels set = TestSentinels.start();
        TestNode a = TestNode.start(config(set).put("redis", config(set).getJsonObject("redis").put("waitReplicas", 1)));
        TestNode b = TestNode.start(config(set).put("redis", config(set).getJsonObject("redis").put("waitReplicas", 1)))) {
      assertEquals(201, a.http().putConsumer("billing", LoadRun.consumerSettings(TOPIC)).status());
      LoadRun load = LoadRun.start(a.http(), TOPIC, b.http(), "billing");
      load.awaitAcked(500);
      set.killPrimary();
      load.awaitConfirmed(1000);
      load.awaitAcked(50);
      load.stop();
      System.out.printf("kill -9 of the primary under load, waitReplicas 1: publishing stopped for %d ms at most;"
          + " %d events confirmed, %d acked%n", load.longestGapMs(), load.confirmed.size(), load.acked.size());

      String primary = set.primaryUrl();
      Set<String> settled = new HashSet<>(load.confirmed);
      settled.removeAll(load.maybeAcked);
      for (String eventId : settled) {
        assertEquals(!load.acked.contains(eventId), Places.holds(primary, "billing", eventId),
            "confirmed event " + eventId + " is held on the new primary unless acked");
      }
      assertEquals(0, Places.misplaced(primary, "billing"), "events held in none or several places");
      load.drain(b.http(), "billing");
      Set<String> lost = new HashSet<>(load.confirmed);
      lost.removeAll(load.received);
      assertTrue(lost.isEmpty(), "confirmed, never delivered: " + lost);
    }
  }

  private interface Failure {
    int strike(TestSentinels set);
  }

  private static void runThrough(String what, TestSentinels sentinels, Failure failure) {
    try (TestSentinels set = sentinels;
        TestNode a = TestNode.start(config(set));
        TestNode b = TestNode.start(config(set))) {
      assertEquals(201, a.http().putConsumer("billing", new JsonObject().put("topics", new JsonArray().add(TOPIC))
          .put("maxPollRecords", 100)).status());
      Set<Object> confirmed = new HashSet<>();
      for (int i = 0; i < 20; i++) {
        TestNode node = i % 2 == 0 ? a : b;
        Reply published = node.http().publish(TOPIC, new JsonObject().put("payload", "before-" + i));
        assertEquals(200, published.status(), published.body());
        confirmed.add("before-" + i);
      }
      Set<Object> received = new HashSet<>(take(b, 10));
      set.awaitReplicated();

      int old = set.primaryPort();
      long struck = System.nanoTime();
      int promoted = failure.strike(set);
      assertNotEquals(old, promoted);
      // each node publishes again by itself: both try in turn until each had a confirmed publish
      long[] followedMs = {-1, -1};
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
        for (int n = 0; n < 2; n++) {
          if (followedMs[n] < 0) {
            String payload = "after-" + n + "-" + System.nanoTime();
            Reply published = (n == 0 ? a : b).http().publish(TOPIC, new JsonObject().put("payload", payload));
            if (published.status() == 200) {
              confirmed.add(payload);
              followedMs[n] = (System.nanoTime() - struck) / 1_000_000;
            }
          }
        }
        return followedMs[0] >= 0 && followedMs[1] >= 0;
      });
      System.out.printf("%s: followed by the nodes %d ms and %d ms after it began%n", what, followedMs[0],
          followedMs[1]);

      // polls and acks go on on the new primary: everything confirmed is there
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
        received.addAll(take(a, 100));
        Set<Object> missing = new HashSet<>(confirmed);
        missing.removeAll(received);
        assertTrue(missing.isEmpty(), "confirmed, not delivered: " + missing);
      });

      // wake-ups follow too: a long poll parked on one node is woken by a publish on the other
      await().atMost(Duration.ofSeconds(60)).until(() -> parkedPollIsWokenByPublish(set, a, b));
    }
  }

  /** Whether a long poll parked on {@code parking} is answered, within 3 s, by an event published on {@code publishing}. */
  private static boolean parkedPollIsWokenByPublish(TestSentinels set, TestNode parking, TestNode publishing)
      throws Exception {
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(() -> parking.http().poll("billing",
        new JsonObject().put("maxEvents", 100).put("waitMs", 20_000)));
    String waiters = Keys.waiters("billing");
    try {
      await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> parked.isDone()
          || RedisCli.send(set.primaryUrl(), Request.cmd(Command.ZCARD).arg(waiters)).toInteger() > 0);
    } catch (ConditionTimeoutException e) {
      // parked where the new primary does not see it (the old one, in the failover's first moments):
      // it is answered when its wait ends, and the next try tells
      Reply stale = parked.get(25, TimeUnit.SECONDS);
      if (stale.status() == 200 && !stale.events().isEmpty()) {
        parking.http().ack("billing", stale.ackIds().toArray(String[]::new));
      }
      System.out.println("a long poll parked on the old primary during the failover was answered at its wait's end");
      return false;
    }
    long publishedAt = System.nanoTime();
    boolean published = !parked.isDone()
        && publishing.http().publish(TOPIC, new JsonObject().put("payload", "wake")).status() == 200;
    Reply reply = parked.get(25, TimeUnit.SECONDS);
    if (reply.status() != 200) {
      return false;
    }
    parking.http().ack("billing", reply.ackIds().toArray(String[]::new));
    return published && !reply.events().isEmpty() && (System.nanoTime() - publishedAt) / 1_000_000 < 3000;
  }

  /** One poll of up to {@code max} events and their ack; the payloads (none when the poll failed). */
  private static Set<Object> take(TestNode node, int max) {
    Reply poll = node.http().poll("billing", new JsonObject().put("maxEvents", max));
    Set<Object> payloads = new HashSet<>();
    if (poll.status() != 200) {
      return payloads;
    }
    poll.events().forEach(e -> payloads.add(((JsonObject) e).getValue("payload")));
    if (!poll.ackIds().isEmpty()) {
      // an ack that fails leaves the events to come back at their deadlines: they were received
      node.http().ack("billing", poll.ackIds().toArray(String[]::new));
    }
    return payloads;
  }
}
