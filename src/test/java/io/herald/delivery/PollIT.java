package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.LoggedErrors;
import io.herald.testing.RedisCli;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class PollIT extends GatewayTest {

  private static List<String> publish(String topic, int count) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ids.add(http().publish(topic, event(i)).results().getJsonObject(0).getString("eventId"));
    }
    return ids;
  }

  @Test
  @DisplayName("whether a batch needs acks is what the script handed out by, not the node's copy of the ack mode")
  void ackModeAsRedisHasIt() {
    String topic = unique("mode");
    String consumer = consumer(new JsonObject().put("ackMode", "auto"), topic);
    http().publish(topic, event(1));
    // explicit in Redis, while both nodes still hold the consumer as auto
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:meta", "ackMode", "explicit");
    Reply batch = http().poll(consumer, max(1));
    assertEquals(1, batch.ackIds().size(), batch.body());
    assertEquals("ACKED", http().ack(consumer, batch.ackIds().get(0)).results().getJsonObject(0).getString("status"));
  }

  @Test
  @DisplayName("oldestUnackedAgeMs counts from the first hand-out, through a short extension and a redelivery")
  void oldestUnackedThroughExtensionAndRedelivery() {
    String topic = unique("age");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("slow"));
    long beforePoll = System.currentTimeMillis();
    Reply first = http().poll(consumer, new JsonObject());
    long afterPoll = System.currentTimeMillis();
    assertEquals(1, first.ackIds().size(), first.body());
    assertAgeSince(consumer, beforePoll, afterPoll);

    // a deadline sooner than the first one's: it no longer tells when the event went out
    Reply extended = http().post("/v1/consumers/" + consumer + "/extend",
        new JsonObject().put("ackIds", new io.vertx.core.json.JsonArray(first.ackIds())).put("extendMs", 1000));
    assertEquals("EXTENDED", extended.results().getJsonObject(0).getString("status"), extended.body());
    assertAgeSince(consumer, beforePoll, afterPoll);

    Reply again = http().poll(consumer, new JsonObject().put("waitMs", 10_000));
    assertEquals(2, again.events().getJsonObject(0).getInteger("deliveryCount"), again.body());
    assertAgeSince(consumer, beforePoll, afterPoll);
  }

  /** The consumer's oldestUnackedAgeMs is that of an event handed out between the two times. */
  private static void assertAgeSince(String consumer, long handedOutFrom, long handedOutBy) {
    long before = System.currentTimeMillis();
    long age = http().metadata(consumer).json().getLong("oldestUnackedAgeMs");
    long after = System.currentTimeMillis();
    assertTrue(age >= before - handedOutBy && age <= after - handedOutFrom,
        age + " ms is not the age of an event handed out " + (before - handedOutBy) + ".." + (after - handedOutFrom) + " ms ago");
  }

  @Test
  @DisplayName("a script that fails inside Redis after writing answers 503 OUTCOME_UNKNOWN and is logged; the event is not lost and the node goes on serving")
  void scriptFailingPartWayIsOutcomeUnknown() {
    String topic = unique("broken");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    String healthy = consumer(new JsonObject(), topic);
    String eventId = http().publish(topic, event(1)).results().getJsonObject(0).getString("eventId");
    String behind = http().publish(topic, event(2)).results().getJsonObject(0).getString("eventId");
    // a key of the wrong type: the poll script fails there, after its hand-out's writes, when a full
    // batch passes the wake-up on to a parked poll
    String waiters = "herald:{c:" + consumer + "}:waiters";
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg(waiters).arg("not a sorted set"));
    LoggedErrors errors = LoggedErrors.watch();
    try {
      Reply failed = http().poll(consumer, max(1));
      assertEquals(503, failed.status(), failed.body());
      assertEquals("OUTCOME_UNKNOWN", failed.errorCode());
      assertTrue(errors.messages().stream().anyMatch(m -> m.contains("failed inside Redis")), errors.messages().toString());
      assertEquals(1, http().poll(healthy, max(1)).events().size());
    } finally {
      errors.close();
      RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg(waiters));
    }
    // the half-made delivery was never the client's: it comes back at its deadline, after the one
    // still waiting in the backlog
    List<String> handed = new ArrayList<>();
    await().atMost(Duration.ofSeconds(15)).until(() -> {
      Reply batch = http().poll(consumer, max(10).put("waitMs", 1000));
      handed.addAll(batch.eventIds());
      batch.ackIds().forEach(ackId -> http().ack(consumer, ackId));
      return handed.size() >= 2;
    });
    assertEquals(List.of(behind, eventId), handed);
  }

  @Test
  @DisplayName("a delivery recorded by an earlier version (no delivery mark) still lapses and is handed out again")
  void deliveryOfEarlierVersionLapses() {
    String topic = unique("upgrade");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    String eventId = http().publish(topic, event(1)).results().getJsonObject(0).getString("eventId");
    String ackId = http().poll(consumer, max(1)).ackIds().get(0);
    // what 0.5 wrote: "deliveryCount:arrival" and its waiting hand-out entry
    String seq = ackId.split("\\.")[1];
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:deliveries", eventId, "1:" + seq + "|D 0 1 0 node http");
    long scriptErrors = RedisCli.errors(redis.url(), "ERR");
    List<Integer> counts = new ArrayList<>();
    await().atMost(Duration.ofSeconds(15)).until(() -> {
      Reply reply = http().poll(consumer, max(1).put("waitMs", 1000));
      assertEquals(200, reply.status(), reply.body());
      reply.events().forEach(e -> counts.add(((JsonObject) e).getInteger("deliveryCount")));
      return !counts.isEmpty();
    });
    assertEquals(List.of(2), counts);
    assertEquals(scriptErrors, RedisCli.errors(redis.url(), "ERR"), "no script failed inside Redis");
  }

  @Test
  @DisplayName("a consumer switched from explicit to auto acks its earlier deliveries as they come back, and they stop holding maxUnacked")
  void switchToAutoSettlesEarlierDeliveries() {
    String topic = unique("switch");
    JsonObject explicit = new JsonObject().put("topics", new io.vertx.core.json.JsonArray().add(topic))
        .put("maxUnacked", 2).put("ackTimeoutMs", 5000).put("redelivery", new JsonObject().put("initialDelayMs", 0));
    String consumer = unique("c");
    assertEquals(201, http().putConsumer(consumer, explicit).status());
    List<String> ids = publish(topic, 3);
    List<String> ackIds = http().poll(consumer, max(2)).ackIds();
    // one waits out a nack delay, the other is pending until its deadline
    http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new io.vertx.core.json.JsonArray().add(ackIds.get(0))).put("action", "REQUEUE").put("delayMs", 0));
    assertEquals(200, http().putConsumer(consumer, explicit.copy().put("ackMode", "auto")).status());

    Reply requeued = http().poll(consumer, max(10));
    assertEquals(List.of(ids.get(0)), requeued.eventIds());
    assertEquals(0, http().metadata(consumer).json().getLong("scheduled"));
    // the room the requeued event left takes the next new one; the pending one comes back at its deadline
    List<String> handed = new ArrayList<>();
    await().atMost(Duration.ofSeconds(15)).until(() -> {
      handed.addAll(http().poll(consumer, max(10).put("waitMs", 1000)).eventIds());
      return handed.size() >= 2;
    });
    assertEquals(List.of(ids.get(2), ids.get(1)), handed);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("unacked"), metadata.encode());
    assertEquals(0, metadata.getLong("stale"));
    // nothing left holds maxUnacked: new events go out two at a time again
    List<String> later = publish(topic, 2);
    assertEquals(later, http().poll(consumer, max(10)).eventIds());
    // the delivery that settled it was the auto one's: the explicit one before it was not acked
    assertEquals("EXPIRED", http().ack(consumer, ackIds.get(1)).results().getJsonObject(0).getString("status"));
    assertEquals(0, http().metadata(consumer).json().getLong("spooledEvents"));
  }

  @Test
  @DisplayName("a batch carries a batchAckId and every event field of the protocol")
  void batchCarriesEveryField() {
    String topic = unique("fields") + "/x";
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 60_000), topic);
    JsonObject sent = new JsonObject().put("payload", new JsonObject().put("total", 12.5))
        .put("key", "customer-7").put("headers", new JsonObject().put("source", "test")).put("correlationId", "c-1");
    String eventId = http().publish(topic, sent).results().getJsonObject(0).getString("eventId");

    JsonObject batch = http().poll(consumer, new JsonObject()).json();
    assertTrue(batch.getString("batchAckId").matches("[0-9a-f]{32}001"), batch.getString("batchAckId"));
    JsonObject event = batch.getJsonArray("events").getJsonObject(0);
    assertEquals(eventId, event.getString("eventId"));
    assertEquals(topic, event.getString("topic"));
    assertEquals("customer-7", event.getString("key"));
    assertEquals(new JsonObject().put("source", "test"), event.getJsonObject("headers"));
    assertEquals(new JsonObject().put("total", 12.5), event.getJsonObject("payload"));
    assertEquals(1, event.getInteger("deliveryCount"));
    assertFalse(event.containsKey("correlationId"), "correlationId is the publisher's");
    long publishedAt = event.getLong("publishedAt");
    assertEquals(60_000, event.getLong("ackDeadline") - publishedAt, 5_000);
    assertTrue(event.getString("ackId").length() > 40);
    assertFalse(batch.containsKey("heldBack"));
  }

  @Test
  @DisplayName("GET with query parameters polls like POST")
  void getPollsLikePost() {
    String topic = unique("get");
    String consumer = consumer(new JsonObject(), topic);
    List<String> ids = publish(topic, 3);
    Reply reply = http().get("/v1/consumers/" + consumer + "/poll?maxEvents=2&waitMs=0");
    assertEquals(200, reply.status());
    assertEquals(ids.subList(0, 2), reply.eventIds());
    Reply bad = http().get("/v1/consumers/" + consumer + "/poll?maxEvents=0");
    assertEquals(400, bad.status());
    assertEquals("maxEvents", bad.json().getJsonObject("error").getJsonObject("details").getString("field"));
  }

  @Test
  @DisplayName("new events come in publish order, at most min(maxEvents, maxPollRecords) at a time")
  void publishOrderAndBatchSize() {
    String topic = unique("order");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 4), topic);
    List<String> ids = publish(topic, 10);
    assertEquals(ids.subList(0, 3), http().poll(consumer, max(3)).eventIds());
    assertEquals(ids.subList(3, 7), http().poll(consumer, max(1000)).eventIds());
    assertEquals(ids.subList(7, 10), http().poll(consumer, new JsonObject()).eventIds());
    assertEquals(List.of(), http().poll(consumer, new JsonObject()).eventIds());
  }

  @Test
  @DisplayName("maxUnacked holds new events back and says so with heldBack")
  void maxUnackedHoldsBack() {
    String topic = unique("cap");
    String consumer = consumer(new JsonObject().put("maxUnacked", 5), topic);
    List<String> ids = publish(topic, 8);
    Reply first = http().poll(consumer, max(3));
    assertEquals(ids.subList(0, 3), first.eventIds());
    Reply second = http().poll(consumer, max(10));
    assertEquals(ids.subList(3, 5), second.eventIds());
    assertEquals("MAX_UNACKED", second.json().getString("heldBack"));
    Reply third = http().poll(consumer, max(10));
    assertEquals(List.of(), third.eventIds());
    assertEquals("MAX_UNACKED", third.json().getString("heldBack"));

    http().ack(consumer, first.ackIds().get(0), first.ackIds().get(1));
    Reply fourth = http().poll(consumer, max(10));
    assertEquals(ids.subList(5, 7), fourth.eventIds());
  }

  @Test
  @DisplayName("stale deliveries handed out again still count against maxUnacked in the same poll")
  void redeliveriesCountAgainstMaxUnackedInTheSamePoll() {
    String topic = unique("stalecap");
    String consumer = consumer(new JsonObject().put("maxUnacked", 3).put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    List<String> ids = publish(topic, 3);
    assertEquals(ids, http().poll(consumer, max(10)).eventIds());
    List<String> later = publish(topic, 3);
    await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
        .until(() -> http().metadata(consumer).json().getLong("stale") == 3);

    Reply again = http().poll(consumer, max(10));
    assertEquals(ids, again.eventIds(), "the stale three come back, and no new event beside them");
    assertEquals("MAX_UNACKED", again.json().getString("heldBack"));
    assertEquals(3, http().metadata(consumer).json().getLong("unacked"));
    assertEquals(3, http().metadata(consumer).json().getLong("backlog"), later.toString());
  }

  @Test
  @DisplayName("a missed deadline makes the delivery stale; it comes back first, with deliveryCount + 1 and a new ackId")
  void staleComesBackFirst() {
    String topic = unique("stale");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    List<String> ids = publish(topic, 2);
    Reply first = http().poll(consumer, max(1));
    assertEquals(ids.subList(0, 1), first.eventIds());
    long deadline = first.events().getJsonObject(0).getLong("ackDeadline");

    await().atMost(Duration.ofSeconds(15)).until(() -> http().metadata(consumer).json().getLong("stale") == 1);
    Reply again = http().poll(consumer, max(2));
    assertEquals(ids, again.eventIds(), "the stale delivery first, then the new event");
    JsonObject redelivered = again.events().getJsonObject(0);
    assertEquals(2, redelivered.getInteger("deliveryCount"));
    assertTrue(redelivered.getLong("ackDeadline") > deadline);
    assertFalse(redelivered.getString("ackId").equals(first.ackIds().get(0)));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getJsonObject("totals").getLong("redelivered"));
  }

  @Test
  @DisplayName("a long poll answers as soon as an event is published, also through another node")
  void longPollWokenAcrossNodes() throws Exception {
    String topic = unique("wake");
    String consumer = consumer(new JsonObject(), topic);
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(
        () -> nodeA.http().poll(consumer, new JsonObject().put("waitMs", 20_000)));
    // the poll must be parked (in the waiters set) before the publish for this test to mean anything
    await().atMost(Duration.ofSeconds(5)).until(() -> isListenedFor(consumer));
    long publishedAt = System.nanoTime();
    String eventId = nodeB.http().publish(topic, event("hello")).results().getJsonObject(0).getString("eventId");
    assertEquals(List.of(eventId), wokenSince(publishedAt, parked).eventIds());
  }

  @Test
  @DisplayName("a long poll held back by maxUnacked is answered when an ack makes room, not at the end of its wait")
  void longPollWokenByAck() throws Exception {
    String topic = unique("room");
    String consumer = consumer(new JsonObject().put("maxUnacked", 1), topic);
    publish(topic, 2);
    Reply first = nodeA.http().poll(consumer, max(10));
    assertEquals(1, first.events().size());
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(
        () -> nodeB.http().poll(consumer, new JsonObject().put("waitMs", 20_000)));
    await().atMost(Duration.ofSeconds(5)).until(() -> isListenedFor(consumer));
    long ackedAt = System.nanoTime();
    nodeA.http().ack(consumer, first.ackIds().get(0));
    assertEquals(1, wokenSince(ackedAt, parked).events().size());
  }

  @Test
  @DisplayName("a wake-up for a poll that is gone, or for a node that no longer listens, goes on to another parked poll")
  void wakeUpPassedOn() throws Exception {
    String topic = unique("passon");
    String consumer = consumer(new JsonObject(), topic);
    String waiters = "herald:{c:" + consumer + "}:waiters";
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(
        () -> nodeB.http().poll(consumer, new JsonObject().put("waitMs", 20_000)));
    await().atMost(Duration.ofSeconds(5)).until(() -> isListenedFor(consumer));
    // ahead of the real poll: one of its own instance that is gone, and one of a node that is gone
    // RESP3: [[member, score]]
    Response real = RedisCli.send(redis.url(), Request.cmd(Command.ZRANGE).arg(waiters).arg(0).arg(0).arg("WITHSCORES"))
        .get(0);
    String id = real.get(0).toString();
    long waitEnds = real.get(1).toLong();
    String instance = id.substring(0, id.lastIndexOf('/'));
    RedisCli.send(redis.url(), Request.cmd(Command.ZADD).arg(waiters)
        .arg(waitEnds - 2000).arg(instance + "/999999").arg(waitEnds - 1000).arg("deadnode/1/1"));
    long publishedAt = System.nanoTime();
    String eventId = nodeA.http().publish(topic, event("on")).results().getJsonObject(0).getString("eventId");
    assertEquals(List.of(eventId), wokenSince(publishedAt, parked).eventIds());
  }

  @Test
  @DisplayName("a long poll is answered when a missed deadline makes a delivery due again, not at the end of its wait")
  void longPollWokenByRedelivery() {
    String topic = unique("due");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("once"));
    Reply first = nodeA.http().poll(consumer, max(1));
    long deadline = first.events().getJsonObject(0).getLong("ackDeadline");
    Reply again = nodeB.http().poll(consumer, new JsonObject().put("waitMs", 20_000));
    assertEquals(first.eventIds(), again.eventIds());
    JsonObject redelivered = again.events().getJsonObject(0);
    assertEquals(2, redelivered.getInteger("deliveryCount"));
    // handed out again soon after the old deadline (by Redis' clock), long before the 20 s wait ended
    long lateMs = redelivered.getLong("ackDeadline") - 5000 - deadline;
    assertTrue(lateMs >= 0 && lateMs < 3000, "redelivered " + lateMs + " ms after the deadline");
  }

  @Test
  @DisplayName("a long poll with nothing to hand out ends empty when its wait is over")
  void longPollEndsEmpty() {
    String consumer = consumer(new JsonObject(), unique("quiet"));
    long start = System.nanoTime();
    Reply reply = http().poll(consumer, new JsonObject().put("waitMs", 300));
    assertTrue((System.nanoTime() - start) / 1_000_000 >= 300);
    assertEquals(200, reply.status());
    assertEquals(List.of(), reply.eventIds());
    assertNull(reply.json().getString("batchAckId"));
  }

  @Test
  @DisplayName("auto ack mode hands out each event once, with no ackIds")
  void autoAckMode() {
    String topic = unique("auto");
    String consumer = consumer(new JsonObject().put("ackMode", "auto"), topic);
    List<String> ids = publish(topic, 3);
    Reply reply = http().poll(consumer, max(10));
    assertEquals(ids, reply.eventIds());
    assertNull(reply.json().getString("batchAckId"));
    assertFalse(reply.events().getJsonObject(0).containsKey("ackId"));
    assertFalse(reply.events().getJsonObject(0).containsKey("ackDeadline"));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("unacked"));
    assertEquals(3, metadata.getJsonObject("totals").getLong("acked"));
  }

  @Test
  @DisplayName("a consumer's deliveries stay a compact listpack up to 64, beyond that a hash table, whatever Redis' listpack limit; acks settle them alike")
  void deliveriesBecomeHashTable() {
    String topic = unique("hashtable");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 100), topic);
    String deliveries = "herald:{c:" + consumer + "}:deliveries";
    publish(topic, 100);
    Reply first = http().poll(consumer, max(60));
    assertEquals(60, first.events().size());
    // (ziplist before Redis 7)
    assertTrue(List.of("listpack", "ziplist").contains(encoding(deliveries)), "60 deliveries: kept compact");
    Reply second = http().poll(consumer, max(40));
    assertEquals(40, second.events().size());
    // below hash-max-listpack-entries (128, or 512 without a configuration file) Redis would keep a
    // listpack, where every field read or written is a scan
    assertEquals("hashtable", encoding(deliveries), "100 deliveries");
    List<String> statuses = new ArrayList<>();
    for (Reply batch : List.of(first, second)) {
      http().ack(consumer, batch.events().stream().map(e -> ((JsonObject) e).getString("ackId")).toArray(String[]::new))
          .results().forEach(r -> statuses.add(((JsonObject) r).getString("status")));
    }
    assertEquals(100, statuses.stream().filter("ACKED"::equals).count(), statuses.toString());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("unacked"));
    assertEquals(100, metadata.getJsonObject("totals").getLong("acked"));
  }

  private static String encoding(String key) {
    return RedisCli.send(redis.url(), Request.cmd(Command.OBJECT).arg("ENCODING").arg(key)).toString();
  }

  @Test
  @DisplayName("events not acked within retention go to the dead-letter queue, and leave it when their retention there ends")
  void retentionExpires() {
    String topic = unique("retention");
    String consumer = consumer(new JsonObject(), topic);
    // retention cannot be set below 60 s; shorten it in the consumer's Redis settings for this test
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:meta", "retentionMs", "300");
    publish(topic, 2);
    http().poll(consumer, max(1));
    // one from the backlog, one handed out: both dead-lettered, then gone 300 ms later
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json()
        .getJsonObject("totals").getLong("expired") == 2);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(2, metadata.getJsonObject("totals").getLong("deadLettered"));
    assertEquals(0, metadata.getLong("backlog") + metadata.getLong("unacked") + metadata.getLong("deadLetters"));
    assertEquals(0, metadata.getLong("spooledBytes"));
  }

  @Test
  @DisplayName("with deadLetter off, events past their retention are dropped and counted")
  void retentionDrops() {
    String topic = unique("retdrop");
    String consumer = consumer(new JsonObject().put("deadLetter", false), topic);
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:meta", "retentionMs", "300");
    publish(topic, 2);
    http().poll(consumer, max(1));
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json()
        .getJsonObject("totals").getLong("dropped") == 2);
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("spooledBytes"));
    assertEquals(0, metadata.getJsonObject("totals").getLong("deadLettered"));
  }

  /** The answer of a 20 s long poll, which must come long before its wait ends: it was woken. */
  private static Reply wokenSince(long sinceNanos, CompletableFuture<Reply> parked) throws Exception {
    Reply reply = parked.get();
    long waitedMs = (System.nanoTime() - sinceNanos) / 1_000_000;
    assertTrue(waitedMs < 10_000, "woken, not answered at the end of the wait: " + waitedMs + " ms");
    return reply;
  }

  private static boolean isListenedFor(String consumer) {
    return RedisCli.exists(redis.url(), "herald:{c:" + consumer + "}:waiters");
  }

  @Test
  @DisplayName("a poll whose client went away while its script ran: what the script handed out goes out again after its backoff, not at its deadline")
  void abandonedPollReleasesItsBatch() throws Exception {
    String topic = unique("abandoned");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 60_000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("once"));
    // Redis holds every command for half a second (within the node's Redis timeout): the poll's
    // script runs after its client is gone
    RedisCli.send(redis.url(), Request.cmd(Command.CLIENT).arg("PAUSE").arg(500).arg("ALL"));
    try (Socket client = new Socket("127.0.0.1", nodeA.port())) {
      byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
      client.getOutputStream().write(("POST /v1/consumers/" + consumer + "/poll HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      client.getOutputStream().write(body);
      client.getOutputStream().flush();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getJsonObject("totals")
        .getLong("delivered") == 1);
    Reply again = http().poll(consumer, new JsonObject().put("waitMs", 5000));
    assertEquals(1, again.events().size(), again.body());
    assertEquals(2, again.events().getJsonObject(0).getInteger("deliveryCount"), again.body());
  }

  @Test
  @DisplayName("an arrival sequence of 100000000 is written as digits (Redis 7.2.0-7.2.4 wrote a Lua number as 1e+08), so its ackId acks, also after a redrive")
  void largeArrivalSequenceIsWrittenAsDigits() {
    String topic = unique("seq");
    String consumer = consumer(new JsonObject(), topic);
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:meta", "seq", "99999999");
    http().publish(topic, event("far"));
    Response pair = RedisCli.send(redis.url(), Request.cmd(Command.LRANGE).arg("herald:{c:" + consumer + "}:arrivals")
        .arg(0).arg(-1));
    // its sequence, then (the packed layout) the stub it keeps while it waits
    assertEquals("100000000", pair.get(1).toString().split(":")[0]);
    Reply batch = http().poll(consumer, max(1));
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new io.vertx.core.json.JsonArray(batch.ackIds())).put("action", "REJECT")).status());
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/errors/redrive", new JsonObject().put("all", true)).status());
    Response again = RedisCli.send(redis.url(), Request.cmd(Command.LRANGE).arg("herald:{c:" + consumer + "}:arrivals")
        .arg(0).arg(-1));
    assertEquals("100000000", again.get(1).toString());
    Reply redriven = http().poll(consumer, max(1));
    assertEquals("ACKED", http().ack(consumer, redriven.ackIds().get(0)).results().getJsonObject(0).getString("status"));
  }
}
