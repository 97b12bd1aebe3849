package io.herald.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Alerts;
import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
@NodeConfig("""
    {"quotas": {"spoolBytes": 30000, "raisePercent": 80, "clearPercent": 60, "syncMs": 100}}""")
class GatewayQuotaIT extends GatewayTest {
  private static final long QUOTA = 30_000;

  @Test
  @DisplayName("publishers on two nodes racing for a small gateway quota never overshoot it; the spool alert is raised at 80 % and cleared below 60 %")
  void concurrentPublishersNeverOvershoot() throws Exception {
    String alerts = consumer(new JsonObject(), "$sys/alerts/>");
    String topic = unique("race");
    String first = consumer(new JsonObject().put("maxPollRecords", 1000), topic);
    String second = consumer(new JsonObject().put("maxPollRecords", 1000), topic);
    AtomicInteger confirmed = new AtomicInteger();
    AtomicInteger refused = new AtomicInteger();
    ExecutorService publishers = Executors.newFixedThreadPool(8);
    try {
      List<Callable<Void>> work = new ArrayList<>();
      for (int p = 0; p < 8; p++) {
        TestNode node = p % 2 == 0 ? nodeA : nodeB;
        work.add(() -> {
          // each publisher goes on until it was refused five times
          for (int refusals = 0; refusals < 5; ) {
            JsonObject result = node.http().publish(topic, event("y".repeat(100))).results().getJsonObject(0);
            if ("CONFIRMED".equals(result.getString("status"))) {
              confirmed.incrementAndGet();
            } else {
              assertEquals(new JsonObject().put("scope", "gateway"), result.getJsonObject("details"));
              refused.incrementAndGet();
              refusals++;
            }
          }
          return null;
        });
      }
      for (Future<Void> done : publishers.invokeAll(work)) {
        done.get();
      }
    } finally {
      publishers.shutdown();
    }
    long held = http().metadata(first).json().getLong("spooledBytes") + http().metadata(second).json().getLong("spooledBytes");
    long copy = http().metadata(first).json().getLong("spooledBytes") / confirmed.get();
    assertEquals(40, refused.get());
    assertTrue(held <= QUOTA, "held " + held + " of " + QUOTA);
    // refusals came only near the quota (the alert event held for the alerts consumer counts too)
    assertTrue(held + 2 * copy > QUOTA - 2_000, "the quota was nearly used up: held " + held);

    JsonObject raised = Alerts.next(http(), alerts, "$sys/alerts/spool");
    assertEquals("RAISED", raised.getString("state"));
    assertTrue(raised.getLong("used") >= QUOTA * 80 / 100, raised.encode());
    JsonObject spool = http().get("/v1/admin/stats").json().getJsonObject("spool");
    assertEquals("RAISED", spool.getString("alert"));
    // the sum over the ledger's shards (one on one server, 16 on a cluster), the alert event included
    assertTrue(spool.getLong("usedBytes") >= QUOTA * 80 / 100, spool.encode());

    for (String consumer : List.of(first, second)) {
      List<String> ackIds = http().poll(consumer, max(1000)).ackIds();
      assertEquals(200, http().ack(consumer, ackIds.toArray(String[]::new)).status());
    }
    JsonObject cleared = Alerts.next(http(), alerts, "$sys/alerts/spool");
    assertEquals("CLEARED", cleared.getString("state"));
    assertTrue(cleared.getLong("used") < QUOTA * 60 / 100, cleared.encode());
    assertEquals("CONFIRMED", http().publish(topic, event(1)).results().getJsonObject(0).getString("status"));
  }
}
