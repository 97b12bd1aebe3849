package io.herald.store;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.herald.testing.LoadRun;
import io.herald.testing.Places;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * redis.waitReplicas: publishes and settlements are confirmed only once a replica took their
 * writes; a replica that does not answer in time turns the confirmation into OUTCOME_UNKNOWN.
 */
@Timeout(60)
class ReplicaWaitIT {
  private TestRedis primary;
  private TestRedis replica;
  private TestNode node;
  private Http http;

  @BeforeEach
  void start() {
    primary = TestRedis.start();
    replica = TestRedis.startReplicaOf(primary);
    node = TestNode.start(primary, new JsonObject().put("redis", new JsonObject().put("url", primary.url())
        .put("waitReplicas", 1).put("waitTimeoutMs", 300)));
    http = node.http();
    assertEquals(201, http.putConsumer("billing", new JsonObject().put("topics", new JsonArray().add("orders"))).status());
  }

  @AfterEach
  void stop() {
    node.close();
    replica.close();
    primary.close();
  }

  @Test
  @DisplayName("a confirmed publish is on the replica already when its answer comes")
  void confirmedPublishIsReplicated() {
    for (int i = 0; i < 20; i++) {
      Reply published = http.publish("orders", new JsonObject().put("payload", i));
      assertEquals(200, published.status(), published.body());
      String eventId = published.results().getJsonObject(0).getString("eventId");
      assertTrue(Places.holds(replica.url(), "billing", eventId), "event " + i + " on the replica");
    }
  }

  @Test
  @DisplayName("with the replica stopped a publish answers 503 OUTCOME_UNKNOWN; its retry with the idempotencyKey, the replica back, stores it once")
  void unreplicatedPublishIsOutcomeUnknown() {
    replica.pause();
    Reply refused = http.publish("orders", new JsonObject().put("payload", "x").put("idempotencyKey", "order-1"));
    assertEquals(503, refused.status(), refused.body());
    assertEquals("OUTCOME_UNKNOWN", refused.errorCode());

    replica.resume();
    Reply retried = http.publish("orders", new JsonObject().put("payload", "x").put("idempotencyKey", "order-1"));
    assertEquals(200, retried.status(), retried.body());
    assertEquals(true, retried.results().getJsonObject(0).getBoolean("duplicate"));
    Reply poll = http.poll("billing", new JsonObject().put("maxEvents", 10));
    assertEquals(1, poll.events().size(), poll.body());
  }

  @Test
  @DisplayName("a delayed publish answered 503 because the replica did not confirm it is held on the primary: its delay's end is filed with the scheduler all the same")
  void unreplicatedPublishIsScheduled() {
    replica.pause();
    try {
      Reply refused = http.publish("orders", new JsonObject().put("payload", "later").put("delayMs", 600_000));
      assertEquals(503, refused.status(), refused.body());
      long filedBy = RedisCli.millis(primary.url()) + 600_000;
      await().atMost(Duration.ofSeconds(10)).until(() ->
          RedisCli.send(primary.url(), Request.cmd(Command.ZSCORE).arg(Keys.DUE).arg("billing")) != null);
      long due = RedisCli.send(primary.url(), Request.cmd(Command.ZSCORE).arg(Keys.DUE).arg("billing")).toLong();
      assertTrue(due > filedBy - 60_000 && due <= filedBy, "filed for " + due);
    } finally {
      replica.resume();
    }
  }

  @Test
  @DisplayName("with the replica stopped an ack answers 503 OUTCOME_UNKNOWN and a poll goes on; the ack again, the replica back, is ALREADY_ACKED")
  void unreplicatedAckIsOutcomeUnknown() {
    assertEquals(200, http.publish("orders", new JsonObject().put("payload", 1)).status());
    assertEquals(200, http.publish("orders", new JsonObject().put("payload", 2)).status());
    String ackId = http.poll("billing", new JsonObject().put("maxEvents", 1)).ackIds().get(0);

    replica.pause();
    Reply ack = http.ack("billing", ackId);
    assertEquals(503, ack.status(), ack.body());
    assertEquals("OUTCOME_UNKNOWN", ack.errorCode());
    Reply poll = http.poll("billing", new JsonObject().put("maxEvents", 1));
    assertEquals(200, poll.status(), "hand-outs do not wait for replicas: " + poll.body());
    assertEquals(1, poll.events().size());

    replica.resume();
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      Reply again = http.ack("billing", ackId);
      assertEquals(200, again.status(), again.body());
      assertEquals("ALREADY_ACKED", again.results().getJsonObject(0).getString("status"));
    });
  }

  @Test
  @DisplayName("an ack retried through another node while the replica is still stopped is not confirmed ALREADY_ACKED: the first ack is not on a replica")
  void retriedAckWaitsForTheFirstOne() {
    assertEquals(200, http.publish("orders", new JsonObject().put("payload", 1)).status());
    String ackId = http.poll("billing", new JsonObject().put("maxEvents", 1)).ackIds().get(0);
    try (TestNode other = TestNode.start(primary, new JsonObject().put("redis", new JsonObject().put("url", primary.url())
        .put("waitReplicas", 1).put("waitTimeoutMs", 300)))) {
      replica.pause();
      assertEquals("OUTCOME_UNKNOWN", http.ack("billing", ackId).errorCode());
      Reply retried = other.http().ack("billing", ackId);
      assertEquals(503, retried.status(), "the retry found the ack done, but not replicated: " + retried.body());
      replica.resume();
      Reply again = other.http().ack("billing", ackId);
      assertEquals("ALREADY_ACKED", again.results().getJsonObject(0).getString("status"), again.body());
    }
  }

  @Test
  @DisplayName("a node starts while the replica is stopped: the consumers of its configuration are written without waiting for it")
  void startsWhileTheReplicaIsAway() {
    replica.pause();
    try (TestNode starting = TestNode.start(primary, new JsonObject()
        .put("redis", new JsonObject().put("url", primary.url()).put("waitReplicas", 1).put("waitTimeoutMs", 300))
        .put("consumers", new JsonObject().put("declared", new JsonObject().put("topics", new JsonArray().add("orders")))))) {
      assertEquals(200, starting.http().get("/v1/admin/consumers/declared").status());
      assertEquals("OUTCOME_UNKNOWN", starting.http().publish("orders", new JsonObject().put("payload", 1)).errorCode(),
          "its publishes still wait for the replica");
    }
  }

  @Test
  @DisplayName("while a publish waits for a stopped replica, polls through the same verticle go on")
  void pollsDoNotQueueBehindWaits() throws Exception {
    try (TestNode single = TestNode.start(primary, new JsonObject().put("http", new JsonObject().put("instances", 1))
        .put("redis", new JsonObject().put("url", primary.url()).put("timeoutMs", 5000).put("waitReplicas", 1)
            .put("waitTimeoutMs", 2000)))) {
      assertEquals(201, single.http().putConsumer("poller", LoadRun.consumerSettings("orders")).status());
      replica.pause();
      CompletableFuture<Reply> publishing = CompletableFuture.supplyAsync(() ->
          single.http().publish("orders", new JsonObject().put("payload", "waits")));
      // a poll queued behind the publish's WAIT (2 s) would be answered only after it
      int answeredMeanwhile = 0;
      while (!publishing.isDone()) {
        Reply poll = single.http().poll("poller", new JsonObject().put("maxEvents", 1));
        assertEquals(200, poll.status(), poll.body());
        if (!publishing.isDone()) {
          answeredMeanwhile++;
        }
      }
      assertEquals(503, publishing.get().status());
      assertTrue(answeredMeanwhile >= 10, "polls answered while the publish waited: " + answeredMeanwhile);
    }
  }

}
