package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.Scrape;
import io.herald.testing.TestCluster;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Wake-ups on a 3-primary Redis Cluster, where PUBLISH counts only the receivers of its own shard. */
@Timeout(120)
class WakeOnClusterIT {
  private static final int PARKED = 50;

  @Test
  @DisplayName("with 50 polls parked for a consumer on each shard, a publish to it wakes about one: its poll script runs a few times, not once per parked poll")
  void onePublishWakesOnePoll() throws Exception {
    ExecutorService clients = Executors.newFixedThreadPool(PARKED);
    try (TestCluster cluster = TestCluster.start();
        TestNode node = TestNode.start(new JsonObject().put("redis", new JsonObject().put("mode", "cluster")
            .put("endpoints", cluster.endpoints())))) {
      // a consumer on each shard: whichever primary the node's wake subscription is on, two are elsewhere
      List<String> consumers = new ArrayList<>();
      for (int i = 0; consumers.size() < 3; i++) {
        String name = "woken-" + i;
        String primary = cluster.primaryOf(cluster.slotOf(Keys.waiters(name)));
        if (consumers.stream().noneMatch(c -> cluster.primaryOf(cluster.slotOf(Keys.waiters(c))).equals(primary))) {
          consumers.add(name);
        }
      }
      for (String consumer : consumers) {
        assertEquals(201, node.http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(consumer)))
            .status());
        String waiters = Keys.waiters(consumer);
        String primary = cluster.primaryOf(cluster.slotOf(waiters));
        List<CompletableFuture<Reply>> parked = new ArrayList<>();
        for (int p = 0; p < PARKED; p++) {
          parked.add(CompletableFuture.supplyAsync(() -> node.http().poll(consumer,
              new JsonObject().put("maxEvents", 10).put("waitMs", 20_000)), clients));
        }
        await().atMost(Duration.ofSeconds(30)).until(() ->
            RedisCli.send(primary, Request.cmd(Command.ZCARD).arg(waiters)).toInteger() == PARKED);
        // the node's alive subscriptions are on every primary (they follow the slot table each second)
        await().atMost(Duration.ofSeconds(10)).until(() -> RedisCli.send(primary, Request.cmd(Command.PUBSUB)
            .arg("NUMSUB").arg("herald:alive:" + nodeId(cluster))).get(1).toInteger() > 0);

        double before = Scrape.of(node.http()).value("herald_redis_script_seconds_count", "script", "poll");
        assertEquals(200, node.http().publish(consumer, new JsonObject().put("payload", "one")).status());
        CompletableFuture.anyOf(parked.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.send(primary, Request.cmd(Command.ZCARD).arg(waiters))
            .toInteger() >= PARKED - 5);
        double polls = Scrape.of(node.http()).value("herald_redis_script_seconds_count", "script", "poll") - before;
        assertTrue(polls <= 5, "one publish ran " + polls + " poll scripts for " + consumer + " with " + PARKED + " parked");
        // every other poll is still parked (one woken for nothing parks again)
        await().atMost(Duration.ofSeconds(5)).until(() ->
            RedisCli.send(primary, Request.cmd(Command.ZCARD).arg(waiters)).toInteger() == PARKED - 1);
      }
    } finally {
      clients.shutdownNow();
    }
  }

  /** The id of the node, from the wake channel it subscribes to on one of the primaries. */
  private static String nodeId(TestCluster cluster) {
    for (String url : cluster.primaries()) {
      for (var channel : RedisCli.send(url, Request.cmd(Command.PUBSUB).arg("CHANNELS").arg("herald:wake:*"))) {
        return channel.toString().substring("herald:wake:".length());
      }
    }
    throw new IllegalStateException("no node subscribes to a wake channel");
  }
}
