package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestSocket;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class DelayedDeliveryIT extends GatewayTest {
  private static final long ACK_TIMEOUT_MS = 30_000;

  /** When a delivery was handed out: its deadline less the consumer's ack timeout. */
  private static long handedOutAt(JsonObject event) {
    return event.getLong("ackDeadline") - ACK_TIMEOUT_MS;
  }

  private static JsonObject delayed(Object payload, String field, long value) {
    return new JsonObject().put("payload", payload).put(field, value);
  }

  @Test
  @DisplayName("delayMs: confirmed at once, counted as delayed, handed out no earlier than its time (on another node), then no longer delayed")
  void delayMsHoldsTheFirstHandOut() {
    String topic = unique("delay");
    String consumer = consumer(new JsonObject(), topic);
    Reply published = http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(delayed("later", "delayMs", 1500)).add(event("now"))));
    assertEquals(200, published.status(), published.body());
    assertEquals(List.of("CONFIRMED", "CONFIRMED"),
        published.results().stream().map(r -> ((JsonObject) r).getString("status")).toList());

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("delayed"), metadata.encode());
    assertEquals(1, metadata.getLong("backlog"), metadata.encode());
    assertEquals(2, metadata.getLong("spooledEvents"), "a delayed event counts against quotas: " + metadata.encode());

    Reply first = http().poll(consumer, new JsonObject().put("maxEvents", 10));
    assertEquals(List.of("now"), first.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
    http().ack(consumer, first.ackIds().toArray(String[]::new));

    Reply later = nodeB.http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 10_000));
    assertEquals(1, later.events().size(), later.body());
    JsonObject event = later.events().getJsonObject(0);
    assertEquals("later", event.getValue("payload"));
    assertTrue(handedOutAt(event) >= event.getLong("publishedAt") + 1500,
        "handed out at " + handedOutAt(event) + ", published at " + event.getLong("publishedAt"));
    assertEquals(1, event.getInteger("deliveryCount"));
    assertEquals(0, http().metadata(consumer).json().getLong("delayed"));
  }

  @Test
  @DisplayName("deliverAt in the past means now; deliverAt ahead holds the event until then")
  void deliverAt() {
    String topic = unique("deliverat");
    String consumer = consumer(new JsonObject(), topic);
    long at = RedisCli.millis(redis.url()) + 1200;
    assertEquals(200, http().publish(topic, delayed("past", "deliverAt", 1)).status());
    assertEquals(200, http().publish(topic, delayed("ahead", "deliverAt", at)).status());

    Reply now = http().poll(consumer, new JsonObject().put("maxEvents", 10));
    assertEquals(List.of("past"), now.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
    Reply ahead = http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 10_000));
    assertEquals(1, ahead.events().size(), ahead.body());
    assertTrue(handedOutAt(ahead.events().getJsonObject(0)) >= at);
  }

  @Test
  @DisplayName("deliverAt and delayMs together, or out of range, are refused naming the field, and nothing is stored")
  void badDelaysRefused() {
    String topic = unique("baddelay");
    String consumer = consumer(new JsonObject(), topic);
    Reply both = http().publish(topic, new JsonObject().put("payload", 1).put("deliverAt", 1).put("delayMs", 5));
    assertEquals(400, both.status());
    assertEquals("INVALID_REQUEST", both.errorCode());
    assertEquals("delayMs", both.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply negative = http().publish(topic, new JsonObject().put("events", new JsonArray()
        .add(event("fine")).add(delayed("bad", "delayMs", -1))));
    assertEquals(400, negative.status());
    assertEquals("events[1].delayMs", negative.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply text = http().publish(topic, new JsonObject().put("payload", 1).put("deliverAt", "tomorrow"));
    assertEquals("deliverAt", text.json().getJsonObject("error").getJsonObject("details").getString("field"));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("spooledEvents"), metadata.encode());
  }

  @Test
  @DisplayName("a delayed event is pushed to a subscribed socket when its time comes")
  void delayedEventIsPushed() {
    String topic = unique("delaypush");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = nodeB.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10));
      assertEquals("subscribed", socket.next().getString("type"));
      assertEquals(200, nodeA.http().publish(topic, delayed("pushed", "delayMs", 1000)).status());
      JsonObject batch = socket.next(10_000);
      assertNotNull(batch, "no batch within 10 s");
      assertEquals("batch", batch.getString("type"), batch.encode());
      JsonObject event = batch.getJsonArray("events").getJsonObject(0);
      assertEquals("pushed", event.getValue("payload"));
      assertTrue(handedOutAt(event) >= event.getLong("publishedAt") + 1000);
    }
  }

  @Test
  @DisplayName("over WebSockets: a publish frame's delayMs holds the event back from socket polls until its time")
  void delayOverWebSocketPublishAndPoll() {
    String topic = unique("delayws");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket publisher = TestSocket.connect(nodeA.port(), "/v1/ws/publish");
        TestSocket socket = nodeB.consumerSocket(consumer)) {
      publisher.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", 1)
          .put("events", new JsonArray().add(delayed("later", "delayMs", 1000)).add(event("now"))));
      JsonObject confirmed = publisher.next();
      assertEquals("publishResult", confirmed.getString("type"), confirmed.encode());
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
      JsonArray first = socket.next().getJsonArray("events");
      assertEquals(List.of("now"), first.stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
      JsonObject[] later = new JsonObject[1];
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() -> {
        socket.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
        JsonArray events = socket.next().getJsonArray("events");
        later[0] = events.isEmpty() ? null : events.getJsonObject(0);
        return later[0] != null;
      });
      assertEquals("later", later[0].getValue("payload"));
      assertTrue(handedOutAt(later[0]) >= later[0].getLong("publishedAt") + 1000);
    }
  }

  @Test
  @DisplayName("the TTL runs from the publish: one that ends during the delay dead-letters the event, never handed out")
  void ttlEndsDuringTheDelay() {
    String topic = unique("delayttl");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, new JsonObject().put("payload", "short-lived").put("ttlMs", 1000).put("delayMs", 60_000));
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getLong("deadLetters") == 1);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("delayed"), metadata.encode());
    assertEquals(0, metadata.getJsonObject("totals").getLong("delivered"), metadata.encode());
    Reply dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject().put("maxEvents", 10));
    assertEquals("TTL_EXPIRED", dead.events().getJsonObject(0).getString("deadLetterReason"), dead.body());
  }

  @Test
  @DisplayName("a delayed event's retention is watched by the expiry index, and its history says SCHEDULED while it waits")
  void delayedEventsRetentionAndHistory() {
    String topic = unique("delayret");
    String consumer = consumer(new JsonObject().put("retentionMs", 60_000), topic);
    Reply published = http().publish(topic, delayed("beyond", "delayMs", 3_600_000));
    String eventId = published.results().getJsonObject(0).getString("eventId");
    long publishedAt = Long.parseLong(eventId.substring(0, 12), 16);
    var ends = RedisCli.send(redis.url(), Request.cmd(Command.ZSCORE).arg(Keys.consumer(consumer).get(3)).arg(eventId));
    assertEquals(publishedAt + 60_000, ends.toLong(), "its retention end is in the expiry index");
    Reply history = http().get("/v1/consumers/" + consumer + "/events/" + eventId);
    assertEquals("SCHEDULED", history.json().getString("state"), history.body());
    // the scheduler is told of the retention end, which comes before the delay's
    await().atMost(Duration.ofSeconds(5)).until(() -> dueAt(consumer) == publishedAt + 60_000);
  }

  @Test
  @DisplayName("a round spooled again (its outcome was unknown) tells the scheduler its delay again, and stores the event once")
  void respooledRoundFilesItsDelayAgain() {
    String topic = unique("respool");
    String consumer = consumer(new JsonObject(), topic);
    Vertx vertx = Vertx.vertx();
    RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
    try {
      long deliverAt = RedisCli.millis(redis.url()) + 600_000;
      String eventId = String.format("%012x", deliverAt - 600_000) + "-0000000000000001";
      List<Object> round = List.of("", 300_000, "", eventId, "\"eventId\":\"" + eventId + "\"", "", "", "", deliverAt, "");
      for (int attempt = 0; attempt < 2; attempt++) {
        Response spooled = store.eval(Script.PUBLISH, Keys.spool(consumer), round).await();
        assertEquals(deliverAt, spooled.get(1).toLong(), "attempt " + attempt + ": " + spooled);
      }
      JsonObject metadata = http().metadata(consumer).json();
      assertEquals(1, metadata.getLong("delayed"), metadata.encode());
      assertEquals(1, metadata.getLong("spooledEvents"), metadata.encode());
    } finally {
      store.close().await();
      vertx.close().await();
    }
  }

  /** The consumer's due time in the scheduler's index, -1 if none. */
  private static long dueAt(String consumer) {
    Response due = RedisCli.send(redis.url(), Request.cmd(Command.ZSCORE).arg(Keys.DUE).arg(consumer));
    return due == null ? -1 : due.toLong();
  }
}
