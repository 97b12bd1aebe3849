package io.herald.ws;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.FreezingProxy;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(90)
class SocketLifecycleIT extends GatewayTest {

  private static TestSocket open(TestNode node, String consumer) {
    return node.consumerSocket(consumer);
  }

  private static JsonObject fastRedelivery() {
    return new JsonObject().put("ackTimeoutMs", 5000).put("redelivery", new JsonObject().put("initialDelayMs", 0));
  }

  /** Polls over HTTP until {@code count} events came back; returns their delivery counts. */
  private static List<Integer> redelivered(String consumer, int count) {
    List<Integer> counts = new ArrayList<>();
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      Reply reply = http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 1000));
      reply.events().forEach(e -> counts.add(((JsonObject) e).getInteger("deliveryCount")));
      return counts.size() >= count;
    });
    return counts;
  }

  @Test
  @DisplayName("a socket that closes mid-batch loses nothing: its unacked events come back at their deadline")
  void closedSocketLosesNothing() {
    String topic = unique("gone");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, events(1, 2, 3));
    try (TestSocket socket = open(nodeA, consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10));
      assertEquals("subscribed", socket.next().getString("type"));
      assertEquals(3, socket.next().getJsonArray("events").size());
    }
    assertEquals(List.of(2, 2, 2), redelivered(consumer, 3));
  }

  @Test
  @DisplayName("with redeliverOnDisconnect, a closed socket's unacked deliveries go out again after their backoff, not at their deadlines")
  void redeliverOnDisconnect() {
    String topic = unique("release");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 600_000).put("redeliverOnDisconnect", true)
        .put("redelivery", new JsonObject().put("initialDelayMs", 2000)), topic);
    http().publish(topic, events(1, 2, 3));
    try (TestSocket socket = open(nodeA, consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 2));
      assertEquals("subscribed", socket.next().getString("type"));
      assertEquals(2, socket.next().getJsonArray("events").size());
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
      assertEquals(1, socket.next().getJsonArray("events").size());
    }
    long closedAt = System.nanoTime();
    // long polls: answered when the backoff ends (the scheduler wakes them), not at the end of the wait
    List<Integer> counts = new ArrayList<>();
    while (counts.size() < 3) {
      http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 20_000)).events()
          .forEach(e -> counts.add(((JsonObject) e).getInteger("deliveryCount")));
    }
    long tookMs = (System.nanoTime() - closedAt) / 1_000_000;
    assertEquals(List.of(2, 2, 2), counts);
    assertTrue(tookMs < 15_000, "redelivered after " + tookMs + " ms");
  }

  @Test
  @DisplayName("with redeliverOnDisconnect, deliveries ended by a closing socket count against maxDeliveries: a poison event reaches the dead-letter queue")
  void disconnectsCountAgainstMaxDeliveries() {
    String topic = unique("poison");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 600_000).put("redeliverOnDisconnect", true)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0).put("maxDeliveries", 2)), topic);
    http().publish(topic, event("crashes every client"));
    for (int delivery = 1; delivery <= 2; delivery++) {
      // a client that receives the event and dies before acking it
      try (TestSocket socket = open(nodeA, consumer)) {
        socket.send(new JsonObject().put("op", "subscribe").put("window", 1));
        assertEquals("subscribed", socket.next().getString("type"));
        JsonObject batch = socket.next();
        assertEquals(delivery, batch.getJsonArray("events").getJsonObject(0).getInteger("deliveryCount"));
      }
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getLong("deadLetters") == 1);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("unacked"));
    assertEquals(0, metadata.getLong("backlog"));
    JsonObject dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject()).events().getJsonObject(0);
    assertEquals("MAX_DELIVERIES", dead.getString("deadLetterReason"));
    assertEquals(2, dead.getInteger("deliveryCount"));
  }

  @Test
  @DisplayName("a node that stops closes its sockets with 1001, and their unacked events come back elsewhere")
  void shutdownClosesWith1001() {
    String topic = unique("shutdown");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, events(1, 2));
    TestNode leaving = TestNode.start(redis);
    TestSocket socket = open(leaving, consumer);
    try {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10));
      assertEquals("subscribed", socket.next().getString("type"));
      assertEquals(2, socket.next().getJsonArray("events").size());
      leaving.close();
      assertEquals((short) 1001, socket.awaitClose());
    } finally {
      socket.close();
    }
    assertEquals(List.of(2, 2), redelivered(consumer, 2));
  }

  @Test
  @DisplayName("a socket that answers pings stays open; one behind a dead network path is closed by the server")
  void heartbeats() throws Exception {
    String consumer = consumer(new JsonObject(), unique("beat"));
    JsonObject quickPings = new JsonObject().put("http", new JsonObject().put("pingIntervalMs", 300).put("pongTimeoutMs", 300));
    try (TestNode node = TestNode.start(redis, quickPings);
        FreezingProxy proxy = new FreezingProxy(node.port());
        TestSocket alive = open(node, consumer);
        TestSocket silent = TestSocket.connect(proxy.port(), "/v1/consumers/" + consumer + "/ws")) {
      assertEquals(false, silent.isClosed());
      proxy.freezeOpenConnections();
      await().atMost(Duration.ofSeconds(10)).until(() -> proxy.closedByTarget() == 1);
      // quiet for several ping intervals, yet answering pings: still open and usable
      await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(5)).until(() -> !alive.isClosed());
      alive.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", alive.next().getString("type"));
    }
  }
}
