package io.herald.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A consumer's own quotas, with a ledger that hears of freed room only once a minute. */
@Timeout(30)
@NodeConfig("""
    {"quotas": {"syncMs": 60000}}""")
class OwnQuotaIT extends GatewayTest {

  @Test
  @DisplayName("a consumer's own quota is exact: acked to empty, it takes new events at once, without waiting for the ledger's sync")
  void ownQuotaIsExact() {
    String topic = unique("orders");
    String limited = consumer(new JsonObject().put("quotaEvents", 2), topic);
    String other = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    assertEquals("QUOTA_EXCEEDED", http().publish(topic, event(3)).results().getJsonObject(0).getString("code"));
    List<String> ackIds = http().poll(limited, max(10)).ackIds();
    assertEquals(200, http().ack(limited, ackIds.toArray(String[]::new)).status());
    JsonArray results = http().publish(topic, events(3, 4)).results();
    assertEquals(List.of("CONFIRMED", "CONFIRMED"), results.stream().map(r -> ((JsonObject) r).getString("status")).toList());
    assertEquals(4, http().metadata(other).json().getLong("backlog"));
  }
}
