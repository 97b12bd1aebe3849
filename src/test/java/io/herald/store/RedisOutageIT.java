package io.herald.store;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.delivery.NotificationVerticle;
import io.herald.testing.FreezingProxy;
import io.herald.testing.LoggedErrors;
import io.herald.testing.LoadRun;
import io.herald.testing.Places;
import io.herald.testing.Http.Reply;
import io.herald.testing.Http;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(90)
class RedisOutageIT {
  private TestRedis redis;
  private TestNode node;
  private Http http;

  @BeforeEach
  void start() {
    redis = TestRedis.start("always");
    node = TestNode.start(redis);
    http = node.http();
    assertEquals(201, http.putConsumer("outage", new JsonObject().put("topics", new JsonArray().add("t/>"))).status());
  }

  @AfterEach
  void stop() {
    node.close();
    redis.close();
  }

  @Test
  @DisplayName("while Redis is down every request gets 503 STORE_UNAVAILABLE at once; after its restart the node recovers by itself")
  void storeUnavailableThenRecovers() {
    String eventId = http.publish("t/a", new JsonObject().put("payload", 1)).results().getJsonObject(0).getString("eventId");
    redis.kill();

    for (Reply reply : List.of(http.publish("t/a", new JsonObject().put("payload", 2)),
        http.publish("t/a", new JsonObject().put("payload", 2).put("idempotencyKey", "k")),
        http.poll("outage", new JsonObject()), http.metadata("outage"), http.ack("outage", "x"),
        http.get("/v1/admin/stats"), http.get("/v1/admin/topics"), http.get("/v1/admin/topics/t/a"),
        http.put("/v1/admin/topics/t/b", new JsonObject().put("enabled", false)),
        http.get("/health/ready"))) {
      assertEquals(503, reply.status(), reply.body());
      assertEquals("STORE_UNAVAILABLE", reply.errorCode(), reply.body());
    }
    assertEquals(200, http.get("/health/live").status());

    redis.restart();
    await().atMost(Duration.ofSeconds(20)).until(() -> http.get("/health/ready").status() == 200);
    Reply poll = await().atMost(Duration.ofSeconds(20)).until(() -> http.poll("outage", new JsonObject()),
        r -> r.status() == 200);
    assertEquals(List.of(eventId), poll.eventIds(), "the event confirmed before the crash is still there");
    assertEquals(200, http.publish("t/a", new JsonObject().put("payload", 3)).status());
  }

  @Test
  @DisplayName("a Redis that stops answering gives 503 within the Redis timeout, not a hang; answers resume with it")
  void hungRedisTimesOut() {
    assertEquals(200, http.publish("t/a", new JsonObject().put("payload", 1)).status());
    redis.pause();
    try {
      long start = System.nanoTime();
      Reply publish = http.publish("t/a", new JsonObject().put("payload", 2));
      Reply metadata = http.metadata("outage");
      long tookMs = (System.nanoTime() - start) / 1_000_000;
      assertEquals(503, publish.status(), publish.body());
      assertEquals(503, metadata.status(), metadata.body());
      assertEquals("STORE_UNAVAILABLE", metadata.errorCode(), "a read that timed out changed nothing");
      assertTrue(tookMs < 10_000, "answered within the timeouts (1 s each here), took " + tookMs + " ms");
    } finally {
      redis.resume();
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> http.publish("t/a", new JsonObject().put("payload", 3)).status() == 200);
    assertEquals(200, http.metadata("outage").status());
  }

  @Test
  @DisplayName("a connection that goes silent (dead network path) is replaced after a timeout, not waited on forever")
  void silentConnectionReplaced() throws Exception {
    try (FreezingProxy proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
        TestNode proxied = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())))) {
      Http client = proxied.http();
      assertEquals(200, client.publish("t/a", new JsonObject().put("payload", 1)).status());
      proxy.freezeOpenConnections();
      assertEquals(503, client.publish("t/a", new JsonObject().put("payload", 2)).status());
      await().atMost(Duration.ofSeconds(20))
          .until(() -> client.publish("t/a", new JsonObject().put("payload", 3)).status() == 200);
    }
  }

  @Test
  @DisplayName("a publish whose answer was lost (503) is retried with its idempotencyKey: stored exactly once, whether the loss came before or after the spool")
  void idempotentRetryAfterLostAnswer() throws Exception {
    try (FreezingProxy proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
        TestNode proxied = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())))) {
      Http client = proxied.http();
      // the scripts are loaded, so they go out by SHA (or as functions) from now on
      assertEquals(200, client.publish("t/warm", new JsonObject().put("payload", 0).put("idempotencyKey", "warm")).status());
      int consumed = http.poll("outage", new JsonObject().put("maxEvents", 10)).events().size();
      assertEquals(1, consumed);

      for (Script lostAfter : List.of(Script.PUBLISH, Script.IDEM_CLAIM)) {
        String key = "order-" + lostAfter.name();
        JsonObject event = new JsonObject().put("payload", lostAfter.name()).put("idempotencyKey", key);
        // a per-consumer script goes out as its function on Redis 7, else by SHA
        boolean function = lostAfter.function() != null && RedisCli.majorVersion(redis.url()) >= 7;
        proxy.freezeAfter(function ? lostAfter.function() : lostAfter.sha());
        Reply lost = client.publish("t/a", event);
        assertEquals(503, lost.status(), lost.body());
        // the node replaces the frozen connection after its timeout; then the retry goes through
        List<Reply> retried = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
          Reply retry = client.publish("t/a", event);
          retried.add(retry);
          return retry.status() == 200;
        });
        JsonObject result = retried.get(retried.size() - 1).results().getJsonObject(0);
        assertEquals(true, result.getBoolean("duplicate"), result.encode());
        JsonArray stored = http.poll("outage", new JsonObject().put("maxEvents", 10)).events();
        assertEquals(1, stored.size(), lostAfter.name() + ": stored exactly once: " + stored.encode());
        assertEquals(result.getString("eventId"), stored.getJsonObject(0).getString("eventId"));
      }
    }
  }

  @Test
  @DisplayName("with appendfsync always, every confirmed event survives a kill -9 of Redis")
  void confirmedEventsSurviveCrash() {
    List<String> confirmed = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      confirmed.add(http.publish("t/b", new JsonObject().put("payload", i)).results().getJsonObject(0).getString("eventId"));
    }
    redis.kill();
    redis.restart();
    List<String> received = new ArrayList<>();
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      Reply reply = http.poll("outage", new JsonObject().put("maxEvents", 1000));
      if (reply.status() == 200) {
        received.addAll(reply.eventIds());
      }
      return received.size() >= confirmed.size();
    });
    assertEquals(confirmed, received);
  }

  @Test
  @DisplayName("a kill -9 of Redis while events are published, acked and nacked loses nothing confirmed and leaves no event in two places")
  void crashMidRunKeepsEveryEventInOnePlace() {
    assertEquals(201, http.putConsumer("midrun", LoadRun.consumerSettings("t/mid")).status());
    LoadRun load = LoadRun.start(http, "t/mid", http, "midrun");
    load.awaitAcked(20);
    redis.kill();
    redis.restart();
    load.awaitConfirmed(20);
    load.stop();

    Set<String> confirmed = new HashSet<>(load.confirmed);
    confirmed.removeAll(load.maybeAcked);
    for (String eventId : confirmed) {
      assertEquals(!load.acked.contains(eventId), Places.holds(redis.url(), "midrun", eventId),
          "confirmed event " + eventId + " is held unless acked");
    }
    assertEquals(0, Places.misplaced(redis.url(), "midrun"),
        "events held in none or several of backlog, pending, stale, scheduled, dead, errors");
  }

  @Test
  @DisplayName("a node whose Redis died stops all the same (figures it could not send are left to the next full sync)")
  void stopsWithRedisDown() {
    TestNode other = TestNode.start(redis);
    assertEquals(200, other.http().publish("t/stop", new JsonObject().put("payload", 1)).status());
    redis.kill();
    other.close();
    redis.restart();
  }

  @Test
  @DisplayName("a subscription whose network path goes silent is pinged, found dead and replaced: long polls are woken again")
  void silentSubscriptionReplaced() throws Exception {
    try (FreezingProxy proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
        TestNode proxied = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())))) {
      Http client = proxied.http();
      assertEquals(200, client.publish("t/a", new JsonObject().put("payload", 1)).status());
      // the subscription's socket among them: it stays open and carries nothing, as a vanished host's would
      proxy.freezeOpenConnections();
      await().atMost(Duration.ofSeconds(30)).until(() -> parkedPollIsWokenByPublish(client));
    }
  }

  @Test
  @DisplayName("a subscription under a steady stream of messages is still checked and not taken for a dead one")
  void busySubscriptionStaysUp() throws Exception {
    Vertx vertx = Vertx.vertx();
    try (LoggedErrors warnings = LoggedErrors.watchWarnings()) {
      Redis client = Redis.createClient(vertx, redis.url());
      RedisConnection listener = client.connect().await();
      BlockingQueue<String> echoChannels = new LinkedBlockingQueue<>();
      listener.handler(message -> {
        if (message.size() >= 4 && message.get(3).toString().startsWith(NotificationVerticle.ECHO)) {
          echoChannels.add(message.get(2).toString());
        }
      });
      listener.send(Request.cmd(Command.PSUBSCRIBE).arg("herald:wake:*")).await();
      String wakeChannel = echoChannels.poll(10, TimeUnit.SECONDS);
      assertNotNull(wakeChannel, "the node checks its subscription with echoes on its own channel");

      // messages the node ignores, back to back, so that one is always on its way while it checks
      RedisConnection publisher = client.connect().await();
      int echoes = 0;
      while (echoes < 3) {
        List<Future<Response>> burst = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          burst.add(publisher.send(Request.cmd(Command.PUBLISH).arg(wakeChannel).arg("not-a-waiter")));
        }
        Future.all(burst).await();
        for (String ignored = echoChannels.poll(); ignored != null; ignored = echoChannels.poll()) {
          echoes++;
        }
      }
      assertEquals(List.of(), warnings.messages(), "the subscription was never found dead");
      assertEquals(List.of(), node.uncaught());
      assertTrue(parkedPollIsWokenByPublish(http));
    } finally {
      vertx.close().await();
    }
  }

  @Test
  @DisplayName("after a Redis restart, long polls are woken by publishes again (the subscription reconnects)")
  void wakeUpsResumeAfterRestart() {
    redis.kill();
    redis.restart();
    await().atMost(Duration.ofSeconds(20)).until(() -> http.get("/health/ready").status() == 200);
    // the subscription comes back within a second or so; until then a parked poll is not woken
    await().atMost(Duration.ofSeconds(30)).until(() -> parkedPollIsWokenByPublish(http));
  }

  /** Parks a 20 s long poll, publishes, and tells whether the poll answered within 5 s with the event (false while Redis fails). */
  private boolean parkedPollIsWokenByPublish(Http http) throws Exception {
    Reply drained;
    do {
      drained = http.poll("outage", new JsonObject().put("maxEvents", 1000));
      if (drained.status() != 200) {
        // Redis (or the node's way to it) not back yet
        return false;
      }
      if (!drained.events().isEmpty()) {
        http.ack("outage", drained.ackIds().toArray(String[]::new));
      }
    } while (!drained.events().isEmpty());
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg("herald:{c:outage}:waiters"));
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(
        () -> http.poll("outage", new JsonObject().put("waitMs", 20_000)));
    await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.exists(redis.url(), "herald:{c:outage}:waiters"));
    long publishedAt = System.nanoTime();
    http.publish("t/c", new JsonObject().put("payload", 1));
    Reply reply = parked.get(25, TimeUnit.SECONDS);
    return reply.status() == 200 && !reply.events().isEmpty() && (System.nanoTime() - publishedAt) / 1_000_000 < 5000;
  }
}
