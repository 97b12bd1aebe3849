package io.herald.deadletter;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Redrives against the gateway's quota: the queues count against none, the spool they go back to does. */
@Timeout(60)
@NodeConfig("""
    {"quotas": {"spoolBytes": 3000, "syncMs": 100}}""")
class RedriveQuotaIT extends GatewayTest {
  private static final long QUOTA = 3000;

  private static String deadLettering(String topic, JsonObject settings) {
    return consumer(settings.copy().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
  }

  private static void deadLetterAll(String consumer) {
    Reply batch = http().poll(consumer, max(100));
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REQUEUE"));
  }

  private static long spoolUsed() {
    return http().get("/v1/admin/stats").json().getJsonObject("spool").getLong("usedBytes");
  }

  @Test
  @DisplayName("a redrive stops where the gateway's quota is reached: the spool never goes over it, the rest stays dead-lettered")
  void redriveRespectsGatewayQuota() {
    String topic = unique("gw");
    String consumer = deadLettering(topic, new JsonObject());
    String payload = "x".repeat(300);
    http().publish(topic, events(payload, payload, payload, payload, payload));
    deadLetterAll(consumer);
    await().atMost(Duration.ofSeconds(5)).until(() -> spoolUsed() == 0);
    http().publish(topic, events(payload, payload, payload));

    Reply redriven = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive", new JsonObject().put("all", true));
    assertEquals(200, redriven.status(), redriven.body());
    long moved = redriven.json().getLong("redriven");
    assertTrue(moved < 5, "redriven: " + moved);
    JsonObject metadata = http().metadata(consumer).json();
    assertTrue(metadata.getLong("spooledBytes") <= QUOTA, metadata.encode());
    assertEquals(5 - moved, metadata.getLong("deadLetters"));
    assertEquals(3 + moved, metadata.getLong("backlog"));
  }
}
