package io.herald.copy;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The shared layout (docs/internals.md): an event's bytes stored once, freed with the last holder. */
@Timeout(60)
class CopiesIT extends GatewayTest {

  private static Response copy(String copyId, String field) {
    String key = Keys.copy(copyId);
    return send(key, Request.cmd(Command.HGET).arg(key).arg(field));
  }

  private static boolean stored(String copyId) {
    String key = Keys.copy(copyId);
    return send(key, Request.cmd(Command.EXISTS).arg(key)).toInteger() == 1;
  }

  private static String eventsValue(String consumer, String eventId) {
    String key = Keys.consumer(consumer).get(2);
    Response value = send(key, Request.cmd(Command.HGET).arg(key).arg(eventId));
    return value == null ? null : value.toString();
  }

  /** The second member of the event's backlog pair: its arrival sequence, and the stub it keeps. */
  private static String pairMember(String consumer, String eventId) {
    String key = Keys.consumer(consumer).get(1);
    long at = send(key, Request.cmd(Command.LPOS).arg(key).arg(eventId)).toLong();
    return send(key, Request.cmd(Command.LINDEX).arg(key).arg(at + 1)).toString();
  }

  private static long keptMs(String copyId) {
    String key = Keys.copy(copyId);
    return send(key, Request.cmd(Command.PTTL).arg(key)).toLong();
  }

  /** Sets a consumer's retention in Redis behind every node's back (below what the API allows). */
  private static void retentionInRedis(String consumer, long retentionMs) {
    String meta = Keys.consumer(consumer).get(0);
    send(meta, Request.cmd(Command.HSET).arg(meta).arg("retentionMs").arg(retentionMs));
  }

  private static long redisMillis(String key) {
    Response time = send(key, Request.cmd(Command.TIME));
    return time.get(0).toLong() * 1000 + time.get(1).toLong() / 1000;
  }

  private static long publishedAt(String eventId) {
    return Long.parseLong(eventId.substring(0, 12), 16);
  }

  private static List<String> published(Reply reply) {
    assertEquals(200, reply.status(), reply.body());
    return reply.results().stream().map(result -> ((JsonObject) result).getString("eventId")).toList();
  }

  private static JsonObject orders(int n) {
    JsonArray events = new JsonArray();
    IntStream.range(0, n).forEach(i -> events.add(new JsonObject().put("key", "k" + (i % 3))
        .put("payload", new JsonObject().put("orderId", "o-" + i).put("lines", new JsonArray().add("sku-" + i)))));
    return new JsonObject().put("events", events);
  }

  @Test
  @DisplayName("ten consumers of a topic share one stored copy of a round, which goes when the last of them acked")
  void oneCopyFreedByTheLastAck() {
    String topic = unique("shared");
    List<String> consumers = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      consumers.add(consumer(new JsonObject().put("maxPollRecords", 100), topic));
    }
    List<String> eventIds = published(http().publish(topic, orders(50)));
    String copyId = Copies.copyOf(eventIds.get(0));
    assertTrue(eventIds.stream().allMatch(id -> Copies.copyOf(id).equals(copyId)), "one copy: " + eventIds);
    assertEquals("10", copy(copyId, "n").toString(), "a mark for each consumer");
    // waiting, the event's stub is in its backlog pair (the packed layout), not an events entry
    assertNull(eventsValue(consumers.get(0), eventIds.get(0)));
    assertTrue(pairMember(consumers.get(0), eventIds.get(0)).matches("\\d+:\\d+ k0"), "a stub, not the event");

    for (int i = 0; i < consumers.size(); i++) {
      // the second node reads the copy from Redis, the first has it cached
      Reply batch = (i % 2 == 0 ? nodeA : nodeB).http().poll(consumers.get(i), max(100));
      assertEquals(eventIds, batch.eventIds());
      assertEquals("o-7", batch.events().getJsonObject(7).getJsonObject("payload").getString("orderId"));
      assertEquals("k1", batch.events().getJsonObject(7).getString("key"));
      assertEquals(200, http().post("/v1/consumers/" + consumers.get(i) + "/acks",
          new JsonObject().put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId")))).status());
      if (i < consumers.size() - 1) {
        int left = consumers.size() - 1 - i;
        await().atMost(Duration.ofSeconds(5)).until(() -> String.valueOf(left).equals(String.valueOf(copy(copyId, "n"))));
        assertTrue(stored(copyId), "held by " + left + " more");
      }
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> !stored(copyId));
  }

  @Test
  @DisplayName("a copy is kept twice its holders' longest retention and an hour: a dead-lettered event may stay that long")
  void copyOutlivesTwiceTheRetention() {
    String topic = unique("kept");
    consumer(new JsonObject().put("retentionMs", 60_000), topic);
    consumer(new JsonObject().put("retentionMs", 7_200_000), topic);
    String copyId = Copies.copyOf(published(http().publish(topic, event("kept"))).get(0));
    long kept = keptMs(copyId);
    assertTrue(kept > 5 * 3_600_000 - 60_000 && kept <= 5 * 3_600_000, "kept " + kept + " ms");
  }

  @Test
  @DisplayName("raising a consumer's retention keeps the copies it holds for the new one")
  void raisedRetentionKeepsHeldCopies() {
    String topic = unique("raised");
    String consumer = consumer(new JsonObject().put("retentionMs", 60_000), topic);
    List<String> copyIds = List.of(Copies.copyOf(published(http().publish(topic, event("first"))).get(0)),
        Copies.copyOf(published(http().publish(topic, event("second"))).get(0)));
    copyIds.forEach(copyId -> assertTrue(keptMs(copyId) < 2 * 3_600_000, "kept for the first retention"));

    assertEquals(200, http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(topic))
        .put("retentionMs", 7_200_000)).status());
    copyIds.forEach(copyId -> assertTrue(keptMs(copyId) > 5 * 3_600_000 - 60_000, "kept " + keptMs(copyId) + " ms"));
    String meta = Keys.consumer(consumer).get(0);
    assertEquals("7200000", send(meta, Request.cmd(Command.HGET).arg(meta).arg("copiesRetentionMs")).toString());
  }

  @Test
  @DisplayName("retention lowered, then raised again: the copies written meanwhile are kept for the raised one")
  void loweredThenRaisedRetentionKeepsCopies() {
    String topic = unique("lowered");
    JsonObject settings = new JsonObject().put("topics", new JsonArray().add(topic));
    String consumer = consumer(settings.copy().put("retentionMs", 7_200_000), topic);
    assertEquals(200, http().putConsumer(consumer, settings.copy().put("retentionMs", 60_000)).status());
    // once the publishing node knows of the lower retention, its rounds' copies are kept for it
    String[] copyId = new String[1];
    await().atMost(Duration.ofSeconds(5)).until(() -> {
      copyId[0] = Copies.copyOf(published(http().publish(topic, event("meanwhile"))).get(0));
      return keptMs(copyId[0]) < 2 * 3_600_000;
    });
    assertEquals(200, http().putConsumer(consumer, settings.copy().put("retentionMs", 7_200_000)).status());
    assertTrue(keptMs(copyId[0]) > 5 * 3_600_000 - 60_000, "kept " + keptMs(copyId[0]) + " ms");
  }

  @Test
  @DisplayName("a dead-lettered event whose copy is gone is dropped when its queue is read, not left there unseen")
  void lostCopyInTheDeadLetterQueueIsDropped() {
    String topic = unique("lostdead");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    String eventId = published(http().publish(topic, event("lost"))).get(0);
    Reply batch = http().poll(consumer, max(1));
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(batch.ackIds().get(0))).put("action", "REQUEUE")).status());
    assertEquals(1L, http().metadata(consumer).json().getLong("deadLetters"));
    String key = Keys.copy(Copies.copyOf(eventId));
    send(key, Request.cmd(Command.DEL).arg(key));

    Reply read = nodeB.http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject());
    assertEquals(0, read.events().size(), read.body());
    await().atMost(Duration.ofSeconds(5)).until(() -> http().metadata(consumer).json().getLong("deadLetters") == 0);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1L, metadata.getJsonObject("totals").getLong("dropped"), metadata.encode());
    assertEquals(0L, metadata.getLong("spooledEvents"), metadata.encode());
  }

  @Test
  @DisplayName("a node whose copy of a consumer's settings is behind a raised retention keeps the round's copy for the new one")
  void staleRetentionIsCaughtBySpool() {
    String topic = unique("stale");
    String consumer = consumer(new JsonObject().put("retentionMs", 60_000), topic);
    // raised in Redis only: every node still spools for a retention of a minute
    retentionInRedis(consumer, 7_200_000);
    String copyId = Copies.copyOf(published(http().publish(topic, event("late"))).get(0));
    assertTrue(keptMs(copyId) > 5 * 3_600_000 - 60_000, "kept " + keptMs(copyId) + " ms");
  }

  @Test
  @DisplayName("a dead-lettered event leaves the queue at twice its retention after publish, redriven or not")
  void deadLetterStayEndsWithinTwiceTheRetention() {
    String topic = unique("dlq");
    String consumer = consumer(new JsonObject(), topic);
    retentionInRedis(consumer, 2_000);
    String eventId = published(http().publish(topic, event("old"))).get(0);
    assertEquals(List.of(eventId), http().poll(consumer, max(1)).eventIds());
    long twice = publishedAt(eventId) + 4_000;
    String dead = Keys.consumer(consumer).get(11);
    String expiry = Keys.consumer(consumer).get(3);
    await().atMost(Duration.ofSeconds(10)).until(() -> send(dead, Request.cmd(Command.ZSCORE).arg(dead).arg(eventId)) != null);
    await().atMost(Duration.ofSeconds(10)).until(() -> redisMillis(dead) > publishedAt(eventId) + 2_500);
    // redriven past its retention, it fails again at once, its stay not longer for that
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(eventId))).status());
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      Response leaves = send(expiry, Request.cmd(Command.ZSCORE).arg(expiry).arg(eventId));
      return send(dead, Request.cmd(Command.ZSCORE).arg(dead).arg(eventId)) != null
          && leaves != null && leaves.toLong() > publishedAt(eventId) + 2_000;
    });
    long leaves = send(expiry, Request.cmd(Command.ZSCORE).arg(expiry).arg(eventId)).toLong();
    assertTrue(leaves <= twice, "leaves at " + leaves + ", twice its retention after publish is " + twice);
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getJsonObject("totals")
        .getLong("expired") == 1);
  }

  @Test
  @DisplayName("a consumer that takes none of a round (disabled, skipping) lets go of its copy at once")
  void untakenCopyIsReleased() {
    String topic = unique("untaken");
    String taking = consumer(new JsonObject(), topic);
    String full = consumer(new JsonObject().put("quotaEvents", 1).put("rejectPublishWhenRefused", false), topic);
    http().publish(topic, event("first"));
    String eventId = published(http().publish(topic, orders(3))).get(0);
    String copyId = Copies.copyOf(eventId);
    // the full one took none of this round: its mark goes, the other's stays
    await().atMost(Duration.ofSeconds(5)).until(() -> "1".equals(String.valueOf(copy(copyId, "n"))));
    assertNull(copy(copyId, "h:" + full));
    assertEquals("1", copy(copyId, "h:" + taking).toString());
  }

  @Test
  @DisplayName("a consumer disabled behind the nodes' backs lets go of the round's copy at once in its spool call")
  void disabledConsumerReleasesAtOnce() {
    String topic = unique("disabled");
    consumer(new JsonObject(), topic);
    String disabled = consumer(new JsonObject().put("rejectPublishWhenRefused", false), topic);
    // disabled in Redis only: the nodes still spool for it, and its spool call skips the round
    String meta = Keys.consumer(disabled).get(0);
    send(meta, Request.cmd(Command.HSET).arg(meta).arg("enabled").arg("false"));
    String copyId = Copies.copyOf(published(http().publish(topic, event("skipped"))).get(0));
    await().atMost(Duration.ofSeconds(5)).until(() -> copy(copyId, "h:" + disabled) == null);
    assertEquals("1", copy(copyId, "n").toString());
  }

  @Test
  @DisplayName("acking the last event of a copy in the dead-letter queue releases the copy at once")
  void deadLetterAckReleasesAtOnce() {
    String topic = unique("deadack");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    String eventId = published(http().publish(topic, event("failed"))).get(0);
    Reply batch = http().poll(consumer, max(1));
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(batch.ackIds().get(0))).put("action", "REQUEUE")).status());
    Reply dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject());
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/dead-letters/acks",
        new JsonObject().put("ackIds", new JsonArray().add(dead.ackIds().get(0)))).status());
    await().atMost(Duration.ofSeconds(5)).until(() -> !stored(Copies.copyOf(eventId)));
  }

  @Test
  @DisplayName("events that leave by their TTL free their copy through the scheduler")
  void expiredEventsFreeTheirCopy() {
    String topic = unique("ttl");
    String consumer = consumer(new JsonObject().put("deadLetter", false), topic);
    JsonObject event = new JsonObject().put("payload", "soon gone").put("ttlMs", 1000);
    String eventId = published(http().publish(topic, new JsonObject().put("events", new JsonArray().add(event)))).get(0);
    String copyId = Copies.copyOf(eventId);
    assertTrue(stored(copyId));
    await().atMost(Duration.ofSeconds(10)).until(() -> !stored(copyId));
    assertEquals(0, http().poll(consumer, max(10)).events().size());
  }

  @Test
  @DisplayName("deleting consumers releases the copies they held")
  void deletedConsumersRelease() {
    String topic = unique("deleted");
    String first = consumer(new JsonObject(), topic);
    String second = consumer(new JsonObject(), topic);
    String copyId = Copies.copyOf(published(http().publish(topic, orders(5))).get(0));
    assertEquals(204, http().delete("/v1/admin/consumers/" + first).status());
    await().atMost(Duration.ofSeconds(5)).until(() -> "1".equals(String.valueOf(copy(copyId, "n"))));
    assertEquals(204, http().delete("/v1/admin/consumers/" + second).status());
    await().atMost(Duration.ofSeconds(5)).until(() -> !stored(copyId));
  }

  @Test
  @DisplayName("a consumer gone before its spool call lets go of the round's copy at once")
  void goneConsumerReleasesAtOnce() {
    String topic = unique("gone");
    consumer(new JsonObject(), topic);
    String gone = consumer(new JsonObject(), topic);
    // gone from Redis behind the nodes' backs: they still spool for it
    String meta = Keys.consumer(gone).get(0);
    send(meta, Request.cmd(Command.DEL).arg(meta));
    String copyId = Copies.copyOf(published(http().publish(topic, event("one left"))).get(0));
    await().atMost(Duration.ofSeconds(5)).until(() -> "1".equals(String.valueOf(copy(copyId, "n"))));
    assertNull(copy(copyId, "h:" + gone));
  }

  @Test
  @DisplayName("the list of copies a deleted consumer leaves to release expires with them")
  void leavingExpires() {
    String topic = unique("leaving");
    String consumer = consumer(new JsonObject().put("retentionMs", 60_000), topic);
    published(http().publish(topic, event("held")));
    String leaving = Keys.leaving(consumer);
    List<String> keys = new ArrayList<>(Keys.spool(consumer));
    keys.add(leaving);
    io.vertx.core.Vertx vertx = io.vertx.core.Vertx.vertx();
    try {
      io.herald.store.RedisStore store = io.herald.store.RedisStore.pipelined(vertx, primaryOf(leaving), 5000);
      store.eval(io.herald.store.Script.CONSUMER_DELETE, keys, List.of()).await();
      long kept = send(leaving, Request.cmd(Command.PTTL).arg(leaving)).toLong();
      assertTrue(kept > 3_600_000 && kept <= 3_720_000, "kept " + kept + " ms");
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }

  @Test
  @DisplayName("an event whose copy is gone is dropped when handed out (state DROPPED); the rest go out")
  void lostCopyIsDropped() {
    String topic = unique("lost");
    String consumer = consumer(new JsonObject(), topic);
    String lost = published(http().publish(topic, event("lost"))).get(0);
    String kept = published(http().publish(topic, event("kept"))).get(0);
    String key = Keys.copy(Copies.copyOf(lost));
    send(key, Request.cmd(Command.DEL).arg(key));
    // nodeB has no copy cached: it reads them from Redis
    Reply batch = nodeB.http().poll(consumer, max(10));
    assertEquals(List.of(kept), batch.eventIds());
    await().atMost(Duration.ofSeconds(5)).until(() -> "DROPPED".equals(nodeB.http()
        .get("/v1/consumers/" + consumer + "/events/" + lost).json().getString("state")));
    assertEquals(1L, nodeB.http().metadata(consumer).json().getJsonObject("totals").getLong("dropped"));
  }

  @Test
  @DisplayName("a waiting event whose stub is in its backlog pair and whose retention ended goes to the dead-letter queue when a poll reaches it, readable there")
  void pairStubFollowsItsEventIntoTheDeadLetterQueue() {
    String topic = unique("pairdead");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = published(http().publish(topic, event("late"))).get(0);
    // its retention ended behind the scheduler's back: the poll is the first to see it
    retentionInRedis(consumer, 1);
    await().atMost(Duration.ofSeconds(5)).until(() -> redisMillis(Keys.consumer(consumer).get(0))
        > publishedAt(eventId) + 1);
    assertEquals(List.of(), http().poll(consumer, max(10)).eventIds());
    Reply dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", new JsonObject());
    assertEquals(1, dead.events().size(), dead.body());
    assertEquals("late", dead.events().getJsonObject(0).getString("payload"));
    assertEquals("RETENTION", dead.events().getJsonObject(0).getString("deadLetterReason"));
  }

  @Test
  @DisplayName("events spooled inline, then in the shared layout, by earlier versions are delivered beside packed ones once the layout is packed")
  void eventsOfEarlierLayoutsStillGoOut() {
    try (TestRedis own = TestRedis.start()) {
      RedisCli.send(own.url(), Request.cmd(Command.SET).arg(Keys.LAYOUT).arg("inline"));
      String topic = "upgrade/orders";
      String events = Keys.consumer("billing").get(2);
      String inline;
      try (TestNode before = TestNode.start(own)) {
        assertEquals(201, before.http().putConsumer("billing", new JsonObject().put("topics", new JsonArray().add(topic)))
            .status());
        inline = published(before.http().publish(topic, event("inline"))).get(0);
      }
      assertTrue(RedisCli.send(own.url(), Request.cmd(Command.HGET).arg(events).arg(inline)).toString().startsWith("\""),
          "spooled inline");
      RedisCli.send(own.url(), Request.cmd(Command.SET).arg(Keys.LAYOUT).arg("shared"));
      String shared;
      try (TestNode middle = TestNode.start(own)) {
        shared = published(middle.http().publish(topic, event("shared"))).get(0);
      }
      assertTrue(RedisCli.send(own.url(), Request.cmd(Command.HGET).arg(events).arg(shared)).toString().matches("\\d+"),
          "a stub in events");
      RedisCli.send(own.url(), Request.cmd(Command.SET).arg(Keys.LAYOUT).arg("packed"));
      try (TestNode after = TestNode.start(own)) {
        String packed = published(after.http().publish(topic, event("packed"))).get(0);
        assertNull(RedisCli.send(own.url(), Request.cmd(Command.HGET).arg(events).arg(packed)), "its stub in its pair");
        Reply batch = after.http().poll("billing", max(10));
        assertEquals(List.of(inline, shared, packed), batch.eventIds());
        String record = RedisCli.send(own.url(), Request.cmd(Command.GET)
            .arg(Keys.batch("billing", batch.json().getString("batchAckId")))).toString();
        assertFalse(record.startsWith("~"), "a node of the packed layout writes the long batch record: " + record);
        assertEquals(List.of("inline", "shared", "packed"), batch.events().stream()
            .map(event -> ((JsonObject) event).getString("payload")).toList());
        assertEquals(200, after.http().ack("billing", batch.ackIds().toArray(String[]::new)).status());
        await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.send(own.url(),
            Request.cmd(Command.EXISTS).arg(Keys.copy(Copies.copyOf(shared))).arg(Keys.copy(Copies.copyOf(packed)))).toInteger() == 0);
      }
    }
  }
}
