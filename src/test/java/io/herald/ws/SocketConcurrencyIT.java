package io.herald.ws;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.herald.testing.GatewayTest;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Many sockets at once on one node, as an outside suite run in parallel opens them. */
@Timeout(60)
class SocketConcurrencyIT extends GatewayTest {
  private static final int SOCKETS = 30;
  /** Each answer and push must come within this, however many sockets are busy. */
  private static final long WITHIN_MS = 1000;

  /** What one socket saw: its error frames, its subscribe answer, and the events pushed to it. */
  private record Seen(int errors, boolean subscribed, int pushed) {}

  private static Seen exercise(String consumer, String topic) {
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.sendText("not json");
      socket.sendText("[1, 2]");
      socket.send(new JsonObject().put("op", "no-such-op").put("requestId", "bad"));
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10).put("requestId", "s"));
      int errors = 0;
      boolean subscribed = false;
      int pushed = 0;
      while (errors < 3 || !subscribed || pushed < 2) {
        JsonObject frame = socket.next(WITHIN_MS);
        assertNotNull(frame, consumer + " waited over " + WITHIN_MS + " ms: " + errors + " errors, subscribed "
            + subscribed + ", " + pushed + " pushed");
        switch (frame.getString("type")) {
          case "error" -> errors++;
          case "subscribed" -> subscribed = true;
          case "batch" -> pushed += frame.getJsonArray("events").size();
          default -> throw new AssertionError("unexpected frame " + frame.encode());
        }
      }
      // and a publish after the subscribe is pushed as promptly
      http().publish(topic, event("later"));
      JsonObject later = socket.next(WITHIN_MS);
      assertNotNull(later, consumer + ": the later event was not pushed within " + WITHIN_MS + " ms");
      return new Seen(errors, subscribed, pushed + later.getJsonArray("events").size());
    }
  }

  @Test
  @DisplayName("30 sockets at once: every error frame for a malformed frame, every subscribe answer and every push (of events waiting before and published after) comes within 1 s")
  void thirtySocketsAtOnce() throws Exception {
    List<String> consumers = new ArrayList<>();
    List<String> topics = new ArrayList<>();
    for (int i = 0; i < SOCKETS; i++) {
      String topic = unique("busy");
      topics.add(topic);
      consumers.add(consumer(new JsonObject(), topic));
      http().publish(topic, events(1, 2));
    }
    ExecutorService clients = Executors.newFixedThreadPool(SOCKETS);
    try {
      List<CompletableFuture<Seen>> running = new ArrayList<>();
      for (int i = 0; i < SOCKETS; i++) {
        int n = i;
        running.add(CompletableFuture.supplyAsync(() -> exercise(consumers.get(n), topics.get(n)), clients));
      }
      for (CompletableFuture<Seen> each : running) {
        assertEquals(new Seen(3, true, 3), each.get());
      }
    } finally {
      clients.shutdownNow();
    }
  }
}
