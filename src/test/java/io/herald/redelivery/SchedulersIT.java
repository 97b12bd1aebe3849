package io.herald.redelivery;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(90)
class SchedulersIT extends GatewayTest {
  private static final int EVENTS = 200;

  @Test
  @DisplayName("three nodes' schedulers at once move each due delivery exactly once")
  void eachDueDeliveryMovedOnce() {
    String topic = unique("sched");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000).put("maxPollRecords", 1000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    try (TestNode nodeC = startNode()) {
      JsonObject events = events(new Object[EVENTS]);
      http().publish(topic, events);
      assertEquals(EVENTS, nodeC.http().poll(consumer, new JsonObject().put("maxEvents", EVENTS)).events().size());

      // not acked: every delivery falls due at once, with three schedulers ticking every 10 ms
      Set<String> redelivered = new HashSet<>();
      List<TestNode> nodes = List.of(nodeA, nodeB, nodeC);
      for (int i = 0; redelivered.size() < EVENTS; i++) {
        Reply batch = nodes.get(i % 3).http().poll(consumer, new JsonObject().put("maxEvents", 100).put("waitMs", 10_000));
        batch.events().forEach(e -> {
          JsonObject event = (JsonObject) e;
          assertEquals(2, event.getInteger("deliveryCount"), event.encode());
          redelivered.add(event.getString("eventId"));
        });
      }
      for (String eventId : redelivered) {
        JsonArray deliveries = http().get("/v1/consumers/" + consumer + "/events/" + eventId).json()
            .getJsonArray("deliveries");
        // one hand-out, one move to stale, one hand-out again
        assertEquals(2, deliveries.size(), deliveries.encode());
        assertEquals("DEADLINE_MISSED", deliveries.getJsonObject(0).getString("outcome"));
        assertEquals(2, deliveries.getJsonObject(1).getInteger("deliveryCount"));
      }
    }
  }
}
