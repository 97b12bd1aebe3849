package io.herald.lifecycle;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.store.RedisProcess;
import io.herald.store.Script;
import io.herald.store.ScriptMarkers;
import io.herald.testing.FreezingProxy;
import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.herald.testing.JarProcess;
import io.herald.testing.LoggedErrors;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What a node does when it is told to stop (SIGTERM: {@code HeraldNode.stop}). */
@Timeout(180)
class ShutdownIT {
  private static final JsonObject EVENT = new JsonObject().put("payload", "last words");

  private static FreezingProxy proxyTo(TestRedis redis) {
    return new FreezingProxy(Integer.parseInt(redis.url().substring(redis.url().lastIndexOf(':') + 1)));
  }

  /** A node that reaches {@code redis} through {@code proxy}, with a Redis timeout long enough to hold an answer back. */
  private static TestNode nodeThrough(TestRedis redis, FreezingProxy proxy) {
    return TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url()).put("timeoutMs", 20_000)));
  }

  private static void putConsumer(TestNode node, String name, String topic) {
    assertEquals(201, node.http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add(topic))).status());
  }

  @Test
  @DisplayName("a stopping node fails readiness and refuses new publishes, polls and sockets with 503 NODE_SHUTTING_DOWN, while the publish in flight finishes and is confirmed; the other node delivers it")
  void refusesNewWorkAndFinishesWhatIsInFlight() throws Exception {
    try (TestRedis redis = TestRedis.start();
        FreezingProxy proxy = proxyTo(redis);
        TestNode stopping = nodeThrough(redis, proxy);
        TestNode other = TestNode.start(redis)) {
      putConsumer(other, "drained", "farewell");
      await().until(() -> stopping.http().metadata("drained").status() == 200);

      // a publish reaches Redis through the stopping node, and its answer is held back on the way
      proxy.stallAfter(ScriptMarkers.of(Script.PUBLISH));
      CompletableFuture<Reply> inFlight = CompletableFuture.supplyAsync(() -> stopping.http().publish("farewell", EVENT));
      await().until(() -> other.http().metadata("drained").json().getInteger("backlog") == 1);

      Future<Void> stopped = stopping.stop();
      Reply ready = stopping.http().get("/health/ready");
      assertEquals(503, ready.status());
      assertEquals("NODE_SHUTTING_DOWN", ready.errorCode());
      Reply publish = stopping.http().publish("farewell", EVENT);
      assertEquals(503, publish.status());
      assertEquals("NODE_SHUTTING_DOWN", publish.errorCode());
      Reply poll = stopping.http().poll("drained", new JsonObject().put("maxEvents", 10));
      assertEquals(503, poll.status());
      assertEquals("NODE_SHUTTING_DOWN", poll.errorCode());
      assertEquals(503, stopping.http().get("/v1/consumers/drained/ws").status());
      assertTrue(!stopped.isComplete() && !inFlight.isDone(), "the node waits for the publish in flight");

      proxy.unstall();
      Reply confirmed = inFlight.get();
      assertEquals(200, confirmed.status(), confirmed.body());
      assertEquals("CONFIRMED", confirmed.results().getJsonObject(0).getString("status"));
      stopped.toCompletionStage().toCompletableFuture().get();

      Reply delivered = other.http().poll("drained", new JsonObject().put("maxEvents", 10));
      assertEquals(List.of(confirmed.results().getJsonObject(0).getString("eventId")), delivered.eventIds());
      assertEquals(200, other.http().publish("farewell", EVENT).status(), "the other node goes on");
    }
  }

  @Test
  @DisplayName("an ack sent over a consumer socket while the node stops is answered before the socket closes with 1001")
  void socketAckInFlightIsAnswered() throws Exception {
    try (TestRedis redis = TestRedis.start();
        FreezingProxy proxy = proxyTo(redis);
        TestNode stopping = nodeThrough(redis, proxy);
        TestNode other = TestNode.start(redis)) {
      putConsumer(other, "socketed", "parting");
      await().until(() -> stopping.http().metadata("socketed").status() == 200);
      assertEquals(200, other.http().publish("parting", EVENT).status());
      try (TestSocket socket = stopping.consumerSocket("socketed")) {
        socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
        String ackId = socket.next().getJsonArray("events").getJsonObject(0).getString("ackId");

        // the ack reaches Redis through the stopping node, and its answer is held back on the way
        proxy.stallAfter(ScriptMarkers.of(Script.ACK));
        socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(ackId)).put("requestId", "last"));
        await().until(() -> other.http().metadata("socketed").json().getInteger("unacked") == 0);
        Future<Void> stopped = stopping.stop();
        assertEquals("NODE_SHUTTING_DOWN", stopping.http().get("/health/ready").errorCode());

        proxy.unstall();
        JsonObject answer = socket.next();
        assertEquals("ackResult", answer.getString("type"), answer.encode());
        assertEquals("ACKED", answer.getJsonArray("results").getJsonObject(0).getString("status"));
        assertEquals((short) 1001, socket.awaitClose());
        stopped.toCompletionStage().toCompletableFuture().get();
      }
    }
  }

  @Test
  @DisplayName("a drain whose time (http.drainMs) is up stops the node with a request still in flight, and says so")
  void drainTimeIsBounded() throws Exception {
    try (TestRedis redis = TestRedis.start();
        TestNode stopping = TestNode.start(redis, new JsonObject().put("http", new JsonObject().put("drainMs", 300)));
        LoggedErrors warnings = LoggedErrors.watchWarnings();
        Socket slow = new Socket(InetAddress.getLoopbackAddress(), stopping.port())) {
      // a publish whose body never finishes arriving: in flight until its connection closes
      slow.getOutputStream().write(("POST /v1/topics/late/events HTTP/1.1\r\nHost: localhost\r\n"
          + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"payload\":").getBytes(StandardCharsets.US_ASCII));
      slow.getOutputStream().flush();
      await().until(() -> stopping.http().get("/health/live").status() == 200);

      long started = System.nanoTime();
      stopping.stop().toCompletionStage().toCompletableFuture().get(15, TimeUnit.SECONDS);
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      assertTrue(warnings.messages().stream().anyMatch(m -> m.contains("still in flight")), warnings.messages().toString());
      // the default 20 s would have been waited out
      assertTrue(tookMs < 8_000, "stopped after " + tookMs + " ms");
    }
  }

  @Test
  @DisplayName("a long poll parked on a stopping node answers at once (empty), so the node stops without waiting out the poll")
  void parkedPollsAnswerAtOnce() throws Exception {
    try (TestRedis redis = TestRedis.start(); TestNode stopping = TestNode.start(redis)) {
      putConsumer(stopping, "patient", "quiet");
      CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(() -> stopping.http().poll("patient",
          new JsonObject().put("maxEvents", 10).put("waitMs", 20_000)));
      await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.ZCARD).arg(Keys.waiters("patient")))
          .toInteger() == 1);

      long started = System.nanoTime();
      stopping.stop().toCompletionStage().toCompletableFuture().get();
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      Reply answer = parked.get();
      assertEquals(200, answer.status(), answer.body());
      assertEquals(0, answer.events().size());
      // waiting the poll out would take the rest of its 20 s
      assertTrue(tookMs < 8_000, "stopped after " + tookMs + " ms");
    }
  }

  @Test
  @DisplayName("SIGTERM to a node under load: each publish is confirmed, or refused with NODE_SHUTTING_DOWN (or its connection refused) and then confirmed by the other node; no confirmed event is lost or doubled, and the other node goes on")
  void sigtermUnderLoad() throws Exception {
    try (TestRedis redis = TestRedis.start();
        TestNode other = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("timeoutMs", 5000)))) {
      putConsumer(other, "loaded", "busy");
      int port = RedisProcess.freePort();
      Set<Integer> confirmed = ConcurrentHashMap.newKeySet();
      AtomicInteger refused = new AtomicInteger();
      AtomicInteger next = new AtomicInteger();
      AtomicBoolean publishing = new AtomicBoolean(true);
      ExecutorService publishers = Executors.newFixedThreadPool(4);
      List<java.util.concurrent.Future<?>> running = new ArrayList<>();
      try (JarProcess jar = JarProcess.start(null, Map.of("HERALD_REDIS_URL", redis.url(),
          "HERALD_HTTP_PORT", String.valueOf(port)))) {
        jar.awaitOutput("Herald listens on");
        Http stopping = new Http("http://127.0.0.1:" + port);
        for (int p = 0; p < 4; p++) {
          running.add(publishers.submit(() -> {
            while (publishing.get()) {
              int n = next.getAndIncrement();
              // the key makes a publish whose outcome was lost with its connection safe to send again
              JsonObject event = new JsonObject().put("payload", n).put("idempotencyKey", "event-" + n);
              Reply reply = null;
              try {
                reply = stopping.publish("busy", event);
              } catch (UncheckedIOException connectionLost) {
                // refused or closed: the node is gone, or going
              }
              if (reply != null && reply.status() == 200) {
                assertEquals("CONFIRMED", reply.results().getJsonObject(0).getString("status"), reply.body());
              } else {
                if (reply != null) {
                  assertEquals("NODE_SHUTTING_DOWN", reply.errorCode(), reply.body());
                  refused.incrementAndGet();
                }
                reply = other.http().publish("busy", event);
                assertEquals("CONFIRMED", reply.results().getJsonObject(0).getString("status"), reply.body());
              }
              confirmed.add(n);
            }
            return null;
          }));
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> confirmed.size() >= 300);
        String output = jar.stop();
        assertTrue(output.contains("Herald listens on"), output);
        assertTrue(!output.contains("did not finish cleanly"), output);
        int atStop = confirmed.size();
        await().atMost(Duration.ofSeconds(30)).until(() -> confirmed.size() >= atStop + 200);
      } finally {
        publishing.set(false);
        publishers.shutdown();
      }
      for (java.util.concurrent.Future<?> publisher : running) {
        publisher.get(); // a failed assertion in a publisher fails the test here
      }
      // every confirmed event is delivered exactly once
      List<Integer> delivered = new ArrayList<>();
      for (Reply batch = other.http().poll("loaded", new JsonObject().put("maxEvents", 1000)); !batch.events().isEmpty();
          batch = other.http().poll("loaded", new JsonObject().put("maxEvents", 1000))) {
        batch.events().forEach(e -> delivered.add(((JsonObject) e).getInteger("payload")));
        assertEquals(200, other.http().ack("loaded", batch.ackIds().toArray(String[]::new)).status());
      }
      assertEquals(confirmed.size(), delivered.size(), "no event delivered twice");
      assertEquals(confirmed, Set.copyOf(delivered));
    }
  }
}
