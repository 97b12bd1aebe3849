package io.herald.quota;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Alerts;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
@NodeConfig("""
    {"quotas": {"maxUnackedTotal": 20, "raisePercent": 80, "clearPercent": 60, "syncMs": 100}}""")
class UnackedTotalIT extends GatewayTest {
  private static final int LIMIT = 20;

  private static String busyConsumer(String topic, int events) {
    String consumer = consumer(new JsonObject().put("maxPollRecords", 100)
        .put("rateLimit", new JsonObject().put("tps", 100_000)), topic);
    JsonArray batch = new JsonArray();
    for (int i = 0; i < events; i++) {
      batch.add(event(i));
    }
    assertEquals(200, http().publish(topic, new JsonObject().put("events", batch)).status());
    return consumer;
  }

  private static long unacked(String consumer) {
    return http().metadata(consumer).json().getLong("unacked");
  }

  private static long total(List<String> consumers) {
    return consumers.stream().mapToLong(UnackedTotalIT::unacked).sum();
  }

  private static void ackAll(String consumer, List<String> ackIds) {
    for (int from = 0; from < ackIds.size(); from += 100) {
      http().ack(consumer, ackIds.subList(from, Math.min(ackIds.size(), from + 100)).toArray(String[]::new));
    }
  }

  @Test
  @DisplayName("pollers of many consumers on two nodes never hold more than maxUnackedTotal unacked; acks free room for a parked long poll; alerts at 80 % and below 60 %")
  void gatewayWideLimit() throws Exception {
    String alerts = consumer(new JsonObject(), "$sys/alerts/>");
    List<String> consumers = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      consumers.add(busyConsumer(unique("busy"), 30));
    }
    List<List<String>> handedOut = new ArrayList<>();
    ExecutorService pollers = Executors.newFixedThreadPool(8);
    try {
      List<Future<List<String>>> runs = new ArrayList<>();
      for (int p = 0; p < 8; p++) {
        String consumer = consumers.get(p % 4);
        TestNode node = p % 2 == 0 ? nodeA : nodeB;
        runs.add(pollers.submit(() -> {
          List<String> ackIds = new ArrayList<>();
          // poll until held back by the gateway-wide limit
          while (true) {
            Reply batch = node.http().poll(consumer, new JsonObject().put("maxEvents", 3));
            ackIds.addAll(batch.ackIds());
            if ("MAX_UNACKED_TOTAL".equals(batch.json().getString("heldBack"))) {
              return ackIds;
            }
          }
        }));
      }
      for (Future<List<String>> run : runs) {
        handedOut.add(run.get());
      }
    } finally {
      pollers.shutdown();
    }
    assertTrue(total(consumers) <= LIMIT, "never more than the limit");
    // a poller that was held back while others' holds were outstanding may have stopped with room
    // left (the holds of polls that hand out fewer than they asked for): the room is handed out
    // once they are settled, never beyond the limit
    int[] turn = {0};
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      int c = turn[0]++ % 4;
      handedOut.get(c).addAll(http().poll(consumers.get(c), new JsonObject().put("maxEvents", 3)).ackIds());
      long total = total(consumers);
      assertTrue(total <= LIMIT, "never more than the limit: " + total);
      return total == LIMIT;
    });
    assertEquals(LIMIT, handedOut.stream().mapToInt(List::size).sum());
    await().atMost(Duration.ofSeconds(5)).until(() ->
        http().get("/v1/admin/stats").json().getJsonObject("unacked").getLong("used") == LIMIT);
    JsonObject stats = http().get("/v1/admin/stats").json().getJsonObject("unacked");
    assertEquals("RAISED", stats.getString("alert"));
    assertEquals("RAISED", Alerts.next(http(), alerts, "$sys/alerts/unacked").getString("state"));

    // a long poll held back by the limit waits; acks elsewhere give it room. It waits on the
    // consumer that holds the fewest (which of them got the room depends on how the pollers raced),
    // so that acking all the others' frees some
    List<List<String>> byConsumer = new ArrayList<>();
    for (int c = 0; c < 4; c++) {
      byConsumer.add(new ArrayList<>());
    }
    for (int p = 0; p < 8; p++) {
      byConsumer.get(p % 4).addAll(handedOut.get(p));
    }
    int least = 0;
    for (int c = 1; c < 4; c++) {
      least = byConsumer.get(c).size() < byConsumer.get(least).size() ? c : least;
    }
    String waiting = consumers.get(least);
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(() ->
        nodeB.http().poll(waiting, new JsonObject().put("maxEvents", 5).put("waitMs", 15_000)));
    for (int c = 0; c < 4; c++) {
      if (c != least) {
        ackAll(consumers.get(c), byConsumer.get(c));
      }
    }
    Reply woken = parked.get();
    // it answers as soon as there is room for at least one (the acks reach the ledger in steps)
    assertTrue(!woken.ackIds().isEmpty(), woken.body());
    // everything acked: use falls below 60 %
    ackAll(waiting, woken.ackIds());
    ackAll(waiting, byConsumer.get(least));
    JsonObject cleared = Alerts.next(http(), alerts, "$sys/alerts/unacked");
    assertEquals("CLEARED", cleared.getString("state"));
    assertTrue(cleared.getLong("used") < LIMIT * 60 / 100, cleared.encode());
  }
}
