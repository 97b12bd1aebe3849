package io.herald.delivery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(180)
class TwoNodeConcurrencyIT extends GatewayTest {
  private static final int EVENTS = 10_000;
  private static final int POLLERS_PER_NODE = 3;

  @Test
  @DisplayName("10,000 events through one node, polled and acked through two: each delivered once, none lost")
  void everyEventOnceAcrossNodes() throws Exception {
    String topic = unique("load");
    // six pollers as fast as they go: far above the default rate limit, which is not what this tests
    String consumer = consumer(new JsonObject().put("maxPollRecords", 100).put("ackTimeoutMs", 120_000)
        .put("rateLimit", new JsonObject().put("tps", 100_000)), topic);
    Set<String> published = ConcurrentHashMap.newKeySet();
    Set<String> delivered = ConcurrentHashMap.newKeySet();
    AtomicInteger duplicates = new AtomicInteger();
    AtomicInteger notAcked = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(1 + 2 * POLLERS_PER_NODE);

    Future<?> publisher = pool.submit(() -> {
      for (int batch = 0; batch < EVENTS / 100; batch++) {
        JsonArray events = new JsonArray();
        for (int i = 0; i < 100; i++) {
          events.add(new JsonObject().put("payload", new JsonObject().put("n", batch * 100 + i)));
        }
        Reply reply = nodeA.http().publish(topic, new JsonObject().put("events", events));
        reply.results().forEach(r -> published.add(((JsonObject) r).getString("eventId")));
      }
    });
    List<Future<?>> pollers = new ArrayList<>();
    for (Http node : List.of(nodeA.http(), nodeB.http())) {
      for (int p = 0; p < POLLERS_PER_NODE; p++) {
        boolean byBatch = p % 2 == 0;
        pollers.add(pool.submit(() -> {
          while (delivered.size() < EVENTS) {
            Reply batch = node.poll(consumer, new JsonObject().put("maxEvents", 100).put("waitMs", 1000));
            for (String id : batch.eventIds()) {
              if (!delivered.add(id)) {
                duplicates.incrementAndGet();
              }
            }
            if (batch.events().isEmpty()) {
              continue;
            }
            Reply acks = byBatch
                ? node.post("/v1/consumers/" + consumer + "/acks",
                    new JsonObject().put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId"))))
                : node.ack(consumer, batch.ackIds().toArray(String[]::new));
            acks.results().forEach(r -> {
              if (!"ACKED".equals(((JsonObject) r).getString("status"))) {
                notAcked.incrementAndGet();
              }
            });
          }
        }));
      }
    }
    publisher.get();
    for (Future<?> poller : pollers) {
      poller.get();
    }
    pool.shutdown();

    assertEquals(EVENTS, published.size());
    assertEquals(0, duplicates.get(), "no event handed to two pollers");
    assertEquals(published, delivered);
    assertEquals(0, notAcked.get());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("backlog"));
    assertEquals(0, metadata.getLong("unacked"));
    assertEquals(EVENTS, metadata.getJsonObject("totals").getLong("acked"));
    assertTrue(metadata.getLong("spooledBytes") == 0, metadata.encode());
  }
}
