package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** maxBatchBytes: a batch holds events up to that many bytes, and always at least one. */
@Timeout(60)
class BatchBytesIT extends GatewayTest {
  /** Events of about 450 bytes as stored each: two fit in 1 KiB, three do not. */
  private static final String PAYLOAD = "p".repeat(350);

  private static JsonObject small() {
    return new JsonObject().put("maxBatchBytes", 1024).put("maxPollRecords", 100);
  }

  private static List<Object> payloads(Reply batch) {
    return batch.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList();
  }

  private static void publishNumbered(String topic, int count, String key) {
    JsonArray events = new JsonArray();
    for (int i = 0; i < count; i++) {
      events.add(new JsonObject().put("payload", PAYLOAD + i).put("key", key));
    }
    assertEquals(200, http().publish(topic, new JsonObject().put("events", events)).status());
  }

  @Test
  @DisplayName("the setting's default is 4 MiB, and values outside 1 KiB .. 64 MiB are refused naming it")
  void settingAndItsRange() {
    String topic = unique("range");
    String consumer = consumer(new JsonObject(), topic);
    assertEquals(4_194_304, http().get("/v1/admin/consumers/" + consumer).json().getInteger("maxBatchBytes"));
    for (long refused : new long[] {1023, 67_108_865}) {
      Reply reply = http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(topic))
          .put("maxBatchBytes", refused));
      assertEquals(400, reply.status(), reply.body());
      assertTrue(reply.body().contains("maxBatchBytes"), reply.body());
    }
  }

  @Test
  @DisplayName("a poll hands out events up to maxBatchBytes, in order; the rest keep their places for the next poll")
  void pollStopsAtTheByteBound() {
    String topic = unique("bytes");
    String consumer = consumer(small(), topic);
    publishNumbered(topic, 5, null);
    List<Object> seen = new ArrayList<>();
    for (int expected : new int[] {2, 2, 1}) {
      Reply batch = http().poll(consumer, max(100));
      assertEquals(expected, batch.events().size(), batch.body());
      seen.addAll(payloads(batch));
    }
    assertEquals(List.of(PAYLOAD + 0, PAYLOAD + 1, PAYLOAD + 2, PAYLOAD + 3, PAYLOAD + 4), seen);
    assertEquals(5, http().metadata(consumer).json().getLong("unacked"));
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("one event larger than maxBatchBytes still goes out, alone")
  void oneEventAlwaysGoesOut() {
    String topic = unique("large");
    String consumer = consumer(small(), topic);
    assertEquals(200, http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", "q".repeat(4000))).add(new JsonObject().put("payload", "after")))).status());
    Reply first = http().poll(consumer, max(100));
    assertEquals(List.of("q".repeat(4000)), payloads(first));
    assertEquals(List.of("after"), payloads(http().poll(consumer, max(100))));
  }

  @Test
  @DisplayName("stale and requeued deliveries come back within the bound too, before new events")
  void redeliveriesStayWithinTheBound() {
    String topic = unique("again");
    String consumer = consumer(small(), topic);
    publishNumbered(topic, 3, null);
    List<String> ackIds = new ArrayList<>(http().poll(consumer, max(100)).ackIds());
    ackIds.addAll(http().poll(consumer, max(100)).ackIds());
    assertEquals(3, ackIds.size());
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(ackIds)).put("action", "REQUEUE").put("delayMs", 0)).status());
    Reply again = http().poll(consumer, new JsonObject().put("maxEvents", 100).put("waitMs", 5000));
    assertEquals(List.of(PAYLOAD + 0, PAYLOAD + 1), payloads(again));
    assertEquals(List.of(PAYLOAD + 2), payloads(http().poll(consumer, max(100))));
  }

  @Test
  @DisplayName("with ordering by key, events whose turn came and are left by the bound keep their turn")
  void orderedEventsKeepTheirTurn() {
    String topic = unique("keys");
    String consumer = consumer(small().put("ordering", "key"), topic);
    for (String key : new String[] {"a", "b", "c"}) {
      publishNumbered(topic, 2, key);
    }
    Reply holders = http().poll(consumer, max(100));
    assertEquals(List.of(PAYLOAD + 0, PAYLOAD + 0), payloads(holders));
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray().add(holders.json().getString("batchAckId")))).status());
    // a's and b's second events are ready, c's first waits in the backlog: two fit
    Reply next = http().poll(consumer, max(100));
    assertEquals(2, next.events().size(), next.body());
    Reply last = http().poll(consumer, max(100));
    assertEquals(1, last.events().size(), last.body());
    List<String> keysOut = new ArrayList<>();
    next.events().forEach(e -> keysOut.add(((JsonObject) e).getString("key") + ((JsonObject) e).getString("payload").substring(350)));
    last.events().forEach(e -> keysOut.add(((JsonObject) e).getString("key") + ((JsonObject) e).getString("payload").substring(350)));
    assertEquals(3, keysOut.stream().distinct().count(), keysOut.toString());
    assertTrue(keysOut.containsAll(List.of("a1", "b1", "c0")), keysOut.toString());
  }

  @Test
  @DisplayName("a long poll and a pushing socket keep to the bound as well")
  void longPollAndPush() {
    String topic = unique("waits");
    String consumer = consumer(small(), topic);
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(() ->
        nodeB.http().poll(consumer, new JsonObject().put("maxEvents", 100).put("waitMs", 10_000)));
    await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.ZCARD).arg(Keys.waiters(consumer))).toInteger() == 1);
    publishNumbered(topic, 3, null);
    Reply woken = parked.join();
    assertTrue(woken.events().size() >= 1 && woken.events().size() <= 2, woken.body());

    String pushed = consumer(small(), unique("pushed"));
    String pushedTopic = http().get("/v1/admin/consumers/" + pushed).json().getJsonArray("topics").getString(0);
    publishNumbered(pushedTopic, 5, null);
    try (TestSocket socket = nodeA.consumerSocket(pushed)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 100).put("requestId", "s"));
      assertEquals("subscribed", socket.next().getString("type"));
      int events = 0;
      while (events < 5) {
        JsonObject batch = socket.next();
        assertEquals("batch", batch.getString("type"), batch.encode());
        int size = batch.getJsonArray("events").size();
        assertTrue(size >= 1 && size <= 2, batch.encode());
        events += size;
      }
      assertEquals(5, events);
    }
  }
}
