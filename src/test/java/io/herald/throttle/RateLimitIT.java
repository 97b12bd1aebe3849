package io.herald.throttle;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class RateLimitIT extends GatewayTest {
  private static final ExecutorService CLIENTS = Executors.newFixedThreadPool(8);

  @AfterAll
  static void stopClients() {
    CLIENTS.shutdownNow();
  }

  private static String limited(String topic, JsonObject rateLimit) {
    return consumer(new JsonObject().put("rateLimit", rateLimit), topic);
  }

  /** {@code requests} polls of {@code consumer} sent at once by 8 clients, alternately to each node. */
  private static List<Reply> burst(String consumer, int requests) {
    List<CompletableFuture<Reply>> sent = new ArrayList<>();
    for (int i = 0; i < requests; i++) {
      TestNode node = i % 2 == 0 ? nodeA : nodeB;
      sent.add(CompletableFuture.supplyAsync(() -> node.http().poll(consumer, new JsonObject()), CLIENTS));
    }
    return sent.stream().map(CompletableFuture::join).toList();
  }

  private static long admitted(List<Reply> replies) {
    return replies.stream().filter(reply -> reply.status() == 200).count();
  }

  /** Reads frames until the next error frame (skipping answers and batches) and returns it. */
  private static JsonObject nextError(TestSocket socket) {
    JsonObject frame = socket.next();
    while (!"error".equals(frame.getString("type"))) {
      frame = socket.next();
    }
    return frame;
  }

  @Test
  @DisplayName("150 polls in a burst over two nodes: 100 pass, then 429 Too Many Requests with Retry-After on both nodes until the block ends; acks go on")
  void blockedAcrossNodes() {
    String topic = unique("rl");
    String consumer = limited(topic, new JsonObject().put("blockMs", 3000));
    http().publish(topic, events(1, 2));
    Reply first = nodeA.http().poll(consumer, max(2));
    List<Reply> replies = burst(consumer, 149);
    assertEquals(99, admitted(replies), "the first poll and 99 of the burst make the limit of 100");

    for (TestNode node : List.of(nodeA, nodeB)) {
      Reply refused = node.http().poll(consumer, new JsonObject());
      assertEquals(429, refused.status());
      assertEquals("TOO_MANY_REQUESTS", refused.errorCode());
      assertEquals("Too Many Requests", refused.json().getJsonObject("error").getString("message"));
      long retryAfter = Long.parseLong(refused.raw().headers().firstValue("Retry-After").orElseThrow());
      assertTrue(retryAfter >= 1 && retryAfter <= 3, "Retry-After " + retryAfter);
    }
    JsonObject acked = nodeB.http().ack(consumer, first.ackIds().toArray(String[]::new)).json();
    assertEquals("ACKED", acked.getJsonArray("results").getJsonObject(0).getString("status"));

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getJsonObject("totals").getLong("blocks"));
    assertEquals(52, metadata.getJsonObject("totals").getLong("throttled"));
    assertTrue(metadata.getJsonObject("throttle").getBoolean("blocked"));
    assertNotNull(metadata.getJsonObject("throttle").getLong("blockedUntil"));

    await().atMost(Duration.ofSeconds(10)).until(() -> nodeB.http().poll(consumer, new JsonObject()).status() == 200);
    assertEquals(200, nodeA.http().poll(consumer, new JsonObject()).status());
  }

  @Test
  @DisplayName("the limit holds in every one-second window: requests just after a second's edge count with those just before it")
  void slidingWindow() {
    String consumer = limited(unique("edge"), new JsonObject().put("tps", 5).put("blockMs", 1000));
    // the last fifth of a second, by Redis' clock, then the next second
    await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5)).until(() -> {
      long ms = RedisCli.millis(redis.url()) % 1000;
      return ms >= 750 && ms < 800;
    });
    long second = RedisCli.millis(redis.url()) / 1000;
    for (int i = 0; i < 5; i++) {
      assertEquals(200, http().poll(consumer, new JsonObject()).status());
    }
    assertEquals(second, RedisCli.millis(redis.url()) / 1000, "the five polls ended within the second");
    await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(5))
        .until(() -> RedisCli.millis(redis.url()) / 1000 > second);
    assertEquals(429, nodeB.http().poll(consumer, new JsonObject()).status(),
        "a window counted per calendar second would let this one through");
  }

  @Test
  @DisplayName("acks never count; a WebSocket subscribe and poll count like HTTP polls")
  void whatCounts() {
    String topic = unique("counts");
    String consumer = limited(topic, new JsonObject().put("tps", 3).put("blockMs", 1000));
    http().publish(topic, events(1, 2, 3));
    Reply polled = http().poll(consumer, max(3));
    for (String ackId : polled.ackIds()) {
      for (int i = 0; i < 5; i++) {
        assertEquals(200, nodeB.http().ack(consumer, ackId).status());
      }
    }
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 1).put("requestId", "s"));
      assertEquals("subscribed", socket.next().getString("type"));
      socket.send(new JsonObject().put("op", "poll").put("requestId", "p"));
      assertEquals("batch", socket.next().getString("type"));
    }
    assertEquals(429, http().poll(consumer, new JsonObject()).status(), "poll, subscribe, poll: the fourth request");
  }

  @Test
  @DisplayName("sockets on both nodes are told at once and again, may still ack, then are dropped without a close frame; upgrades get 429 until the block ends")
  void socketsNotifiedThenDropped() {
    String topic = unique("drop");
    String consumer = limited(topic, new JsonObject().put("tps", 10).put("blockMs", 4000).put("graceMs", 1500)
        .put("noticeIntervalMs", 300));
    http().publish(topic, events(1, 2));
    try (TestSocket polling = nodeA.consumerSocket(consumer); TestSocket pushed = nodeB.consumerSocket(consumer)) {
      polling.send(new JsonObject().put("op", "poll").put("maxEvents", 2));
      JsonObject batch = polling.next();
      assertEquals(2, batch.getJsonArray("events").size());
      pushed.send(new JsonObject().put("op", "subscribe").put("window", 5));
      assertEquals("subscribed", pushed.next().getString("type"));

      assertTrue(admitted(burst(consumer, 20)) < 20);
      for (TestSocket socket : List.of(polling, pushed)) {
        JsonObject notice = nextError(socket);
        assertEquals(new JsonObject().put("type", "error").put("status", 429).put("code", "TOO_MANY_REQUESTS")
            .put("message", "Too Many Requests"), notice);
        assertEquals(429, nextError(socket).getInteger("status"), "told again every noticeIntervalMs");
      }
      // during the grace: acks are processed, polls refused
      polling.send(new JsonObject().put("op", "ack").put("batchAckId", batch.getString("batchAckId")).put("requestId", "a"));
      JsonObject ackResult = polling.next();
      while (!"ackResult".equals(ackResult.getString("type"))) {
        ackResult = polling.next();
      }
      assertEquals(List.of("ACKED", "ACKED"), ackResult.getJsonArray("results").stream()
          .map(r -> ((JsonObject) r).getString("status")).toList());
      polling.send(new JsonObject().put("op", "poll").put("requestId", "refused"));
      JsonObject refused = nextError(polling);
      while (!"refused".equals(refused.getString("requestId"))) {
        refused = nextError(polling);
      }
      assertEquals(429, refused.getInteger("status"));

      for (TestSocket socket : List.of(polling, pushed)) {
        assertEquals((short) 1006, socket.awaitClose(), "no close frame: the client sees 1006");
      }
    }
    UpgradeRejectedException upgrade = assertThrows(UpgradeRejectedException.class, () -> nodeB.consumerSocket(consumer));
    assertEquals(429, upgrade.getStatus());
    await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> {
      try (TestSocket again = nodeA.consumerSocket(consumer)) {
        return !again.isClosed();
      }
    });
  }

  @Test
  @DisplayName("closeMode policy closes the sockets with 1008 when the grace ends")
  void policyCloseMode() {
    String consumer = limited(unique("policy"), new JsonObject().put("tps", 5).put("blockMs", 2000).put("graceMs", 0)
        .put("closeMode", "policy"));
    try (TestSocket socket = nodeB.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"));
      burst(consumer, 10);
      assertEquals(429, nextError(socket).getInteger("status"));
      assertEquals((short) 1008, socket.awaitClose());
    }
  }

}
