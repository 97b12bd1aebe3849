package io.herald.ack;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class AckIT extends GatewayTest {

  private static Map<String, String> statuses(Reply reply) {
    assertEquals(200, reply.status(), reply.body());
    return reply.results().stream().map(r -> (JsonObject) r)
        .collect(Collectors.toMap(r -> r.getString("ackId", r.getString("batchAckId")), r -> r.getString("status"),
            (a, b) -> a + "," + b));
  }

  private static JsonObject fastRedelivery() {
    return new JsonObject().put("ackTimeoutMs", 5000).put("redelivery", new JsonObject().put("initialDelayMs", 0));
  }

  private static Map<String, Long> countStatuses(Reply reply) {
    return reply.results().stream()
        .collect(Collectors.groupingBy(r -> ((JsonObject) r).getString("status"), Collectors.counting()));
  }

  /**
   * The batch keys of each script call with batch keys that Redis ran during {@code action} (none
   * other may run then), read from the slow log with every command logged: FCALL function numkeys
   * keys... (EVALSHA sha numkeys keys... before Redis 7)
   */
  private static List<Integer> batchKeysPerAckCall(Runnable action) {
    RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-log-slower-than").arg(0));
    RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-max-len").arg(100_000));
    RedisCli.send(redis.url(), Request.cmd(Command.SLOWLOG).arg("RESET"));
    List<Integer> batchKeys = new ArrayList<>();
    try {
      action.run();
      for (Response entry : RedisCli.send(redis.url(), Request.cmd(Command.SLOWLOG).arg("GET").arg(100_000))) {
        Response args = entry.get(3);
        // the per-consumer scripts take the consumer's keys; an ack call adds one per batch
        String command = args.get(0).toString();
        int own = Keys.consumer("any").size();
        if ((command.equalsIgnoreCase("fcall") || command.equalsIgnoreCase("evalsha")) && args.get(2).toInteger() > own) {
          batchKeys.add(0, args.get(2).toInteger() - own);
        }
      }
    } finally {
      RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-log-slower-than").arg(10_000));
      RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-max-len").arg(128));
    }
    return batchKeys;
  }

  @Test
  @DisplayName("a delivery whose mark has no size (handed out by 0.6.0) is acked with its size read from Redis")
  void markWithoutSize() {
    String topic = unique("nosize");
    String consumer = consumer(new JsonObject(), topic);
    String eventId = http().publish(topic, event("old")).results().getJsonObject(0).getString("eventId");
    String[] parts = http().poll(consumer, max(1)).ackIds().get(0).split("\\.");
    String callMark = parts[3].substring(0, 16);
    RedisCli.hset(redis.url(), "herald:{c:" + consumer + "}:deliveries", eventId, parts[2] + ":" + parts[1] + ":" + callMark);
    String salt = RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg("herald:{c:" + consumer + "}:meta").arg("salt"))
        .toString();
    String older = AckIds.make(salt, eventId, parts[1], parts[2], callMark);
    assertEquals(Map.of(older, "ACKED"), statuses(http().ack(consumer, older)));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("spooledBytes"), metadata.encode());
    assertEquals(0, metadata.getLong("unacked"), metadata.encode());
  }

  @Test
  @DisplayName("a batch key written by 0.6.0 (its ackIds) is still acked by its batchAckId")
  void batchOfEarlierVersion() {
    String topic = unique("older");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(consumer, max(3));
    String batchAckId = batch.json().getString("batchAckId");
    RedisCli.send(redis.url(), Request.cmd(Command.SET)
        .arg("herald:{c:" + consumer + "}:batch:" + batchAckId.substring(0, 32)).arg(String.join(" ", batch.ackIds())));
    Reply acked = http().post("/v1/consumers/" + consumer + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(batchAckId)));
    Map<String, String> expected = batch.ackIds().stream().collect(Collectors.toMap(a -> a, a -> "ACKED"));
    assertEquals(expected, statuses(acked));
  }

  @Test
  @DisplayName("acking part of a batch sets the ack bit of each acked event and of no other, across two memory segments")
  void ackBitsOfAPartialBatch() {
    String topic = unique("bits");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 200), topic);
    String memory = "herald:{c:" + consumer + "}:memory";
    // arrivals 8101..8250: the memory segment of sequences 7168..8191 ends among them
    RedisCli.send(redis.url(), Request.cmd(Command.HSET).arg("herald:{c:" + consumer + "}:meta").arg("seq").arg(8100));
    JsonArray many = new JsonArray();
    for (int i = 0; i < 150; i++) {
      many.add(event(i));
    }
    http().publish(topic, new JsonObject().put("events", many));
    List<String> ackIds = http().poll(consumer, max(150)).ackIds();
    assertEquals(150, ackIds.size());
    List<String> skipped = List.of(ackIds.get(9), ackIds.get(140), ackIds.get(141), ackIds.get(149));
    List<String> acked = ackIds.stream().filter(a -> !skipped.contains(a)).toList();
    Map<String, Long> counts = countStatuses(http().ack(consumer, acked.toArray(String[]::new)));
    assertEquals(Map.of("ACKED", 146L), counts);

    String salt = RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg("herald:{c:" + consumer + "}:meta").arg("salt"))
        .toString();
    for (String ackId : ackIds) {
      long seq = Long.parseLong(ackId.split("\\.")[1]);
      assertTrue(seq > 8100 && seq <= 8250, ackId);
      // a segment is a bitmap of 1024 sequences, the first in the high bit of its first byte
      Response segment = RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg(memory)
          .arg("a:" + salt.substring(0, 8) + ":" + seq / 1024));
      byte[] bits = segment == null ? new byte[0] : segment.toBytes();
      int at = (int) (seq % 1024);
      int bit = at / 8 < bits.length ? (bits[at / 8] >> (7 - at % 8)) & 1 : 0;
      assertEquals(skipped.contains(ackId) ? 0 : 1, bit, "the ack bit of arrival " + seq);
    }
    assertEquals("ALREADY_ACKED", statuses(http().ack(consumer, acked.get(0))).get(acked.get(0)));
    assertEquals("ALREADY_ACKED", statuses(http().ack(consumer, acked.get(acked.size() - 1))).get(acked.get(acked.size() - 1)));
  }

  @Test
  @DisplayName("a consumer deleted and made again: a node that read ackIds with the old salt learns the new one, and an old ackId is UNKNOWN")
  void consumerMadeAgain() {
    String topic = unique("again");
    JsonObject settings = new JsonObject().put("topics", new JsonArray().add(topic));
    String consumer = unique("c");
    assertEquals(201, http().putConsumer(consumer, settings).status());
    http().publish(topic, event("old"));
    // node A hears the first salt from its poll and its ack
    String old = http().poll(consumer, new JsonObject()).ackIds().get(0);
    assertEquals(Map.of(old, "ACKED"), statuses(http().ack(consumer, old)));

    assertEquals(204, http().delete("/v1/admin/consumers/" + consumer).status());
    assertEquals(201, http().putConsumer(consumer, settings).status());
    http().publish(topic, event("new"));
    Reply handed = nodeB.http().poll(consumer, new JsonObject().put("waitMs", 5000));
    String fresh = handed.ackIds().isEmpty() ? null : handed.ackIds().get(0);
    assertTrue(fresh != null, handed.body());
    // node A still holds the first salt: the script tells it, and it reads the ackId again
    assertEquals(Map.of(fresh, "ACKED"), statuses(http().ack(consumer, fresh)));
    assertEquals(Map.of(old, "UNKNOWN"), statuses(http().ack(consumer, old)));
  }

  @Test
  @DisplayName("ten batches of 200 events acked in one request are settled by several script calls of at most 1,000 events each")
  void batchAcksAreSpreadOverBoundedCalls() {
    String topic = unique("bounded");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 200).put("maxUnacked", 5000), topic);
    for (int i = 0; i < 2; i++) {
      http().publish(topic, events(new Object[1000]));
    }
    JsonArray batchAckIds = new JsonArray();
    for (int i = 0; i < 10; i++) {
      batchAckIds.add(http().poll(consumer, max(200)).json().getString("batchAckId"));
    }
    List<Integer> batchKeysPerCall = batchKeysPerAckCall(() -> {
      Reply acked = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("batchAckIds", batchAckIds));
      assertEquals(Map.of("ACKED", 2000L), countStatuses(acked));
    }).stream().filter(keys -> keys > 1).toList();
    assertTrue(batchKeysPerCall.size() >= 2, "calls with batches: " + batchKeysPerCall);
    assertTrue(batchKeysPerCall.stream().allMatch(keys -> keys * 200 <= 1000), "batches per call: " + batchKeysPerCall);
  }

  @Test
  @DisplayName("batches larger than their batchAckIds say are left by a full script call for the next: a client's word does not unbound a call")
  void scriptLeavesBatchesBeyondItsBudget() {
    String topic = unique("understated");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 1000).put("maxUnacked", 5000), topic);
    for (int i = 0; i < 2; i++) {
      http().publish(topic, events(new Object[1000]));
    }
    JsonArray batchAckIds = new JsonArray();
    for (int i = 0; i < 2; i++) {
      String batchAckId = http().poll(consumer, max(1000)).json().getString("batchAckId");
      // the same batch, said to hold one event
      batchAckIds.add(batchAckId.substring(0, 32) + "001");
    }
    List<Integer> calls = batchKeysPerAckCall(() -> {
      Reply acked = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("batchAckIds", batchAckIds));
      assertEquals(Map.of("ACKED", 2000L), countStatuses(acked));
    });
    // both batches sent in one call, which settles the first and leaves the second to a call of its own
    assertEquals(List.of(2, 1), calls);
  }

  @Test
  @DisplayName("an ack for a consumer gone from Redis (deleted meanwhile) answers 404 naming it, through the ack tracker")
  void ackOfGoneConsumerNamesIt() {
    String topic = unique("gone");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    String ackId = http().poll(consumer, max(1)).ackIds().get(0);
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg("herald:{c:" + consumer + "}:meta"));
    Reply gone = http().ack(consumer, ackId);
    assertEquals(404, gone.status(), gone.body());
    assertEquals("NOT_FOUND", gone.errorCode());
    assertEquals(consumer, gone.json().getJsonObject("error").getJsonObject("details").getString("consumer"));
  }

  @Test
  @DisplayName("an ack of the latest delivery is ACKED, a repeat ALREADY_ACKED, garbage UNKNOWN")
  void ackStatuses() {
    String topic = unique("ack");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    Reply batch = http().poll(consumer, max(10));
    String first = batch.ackIds().get(0);
    String forged = first.substring(0, first.length() - 4) + "0000";

    Map<String, String> results = statuses(http().ack(consumer, first, "not-an-ack-id", forged));
    assertEquals(Map.of(first, "ACKED", "not-an-ack-id", "UNKNOWN", forged, "UNKNOWN"), results);
    assertEquals(Map.of(first, "ALREADY_ACKED"), statuses(http().ack(consumer, first)));

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("unacked"));
    assertEquals(1, metadata.getJsonObject("totals").getLong("acked"));
  }

  @Test
  @DisplayName("a batchAckId acks every event of its batch, one row per event")
  void batchAck() {
    String topic = unique("batch");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(consumer, max(10));
    http().ack(consumer, batch.ackIds().get(1));

    Reply reply = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId")).add("0".repeat(32))));
    Map<String, String> results = statuses(reply);
    assertEquals("ACKED", results.get(batch.ackIds().get(0)));
    assertEquals("ALREADY_ACKED", results.get(batch.ackIds().get(1)));
    assertEquals("ACKED", results.get(batch.ackIds().get(2)));
    assertEquals("UNKNOWN", results.get("0".repeat(32)));
    assertEquals(0, http().metadata(consumer).json().getLong("unacked"));
  }

  /** What the batch key of {@code batch} holds. */
  private static String batchRecord(String consumer, Reply batch) {
    return RedisCli.send(redis.url(), Request.cmd(Command.GET)
        .arg(Keys.batch(consumer, batch.json().getString("batchAckId")))).toString();
  }

  /** Acks by {@code batchAckId} and answers each row's ackId with its status, in their order. */
  private static List<String> ackBatch(String consumer, String batchAckId) {
    Reply reply = http().post("/v1/consumers/" + consumer + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(batchAckId)));
    assertEquals(200, reply.status(), reply.body());
    return reply.results().stream().map(r -> (JsonObject) r).map(r -> r.getString("ackId") + " " + r.getString("status"))
        .toList();
  }

  @Test
  @DisplayName("a new installation's batch key keeps a round's events in a few bytes, not ~45 per event, and its batchAckId acks each, ALREADY_ACKED when sent again")
  void shortBatchRecord() {
    assertEquals("compact", RedisCli.send(redis.url(), Request.cmd(Command.GET).arg(Keys.LAYOUT)).toString());
    String topic = unique("short");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 200), topic);
    Object[] payloads = java.util.stream.IntStream.range(0, 200).boxed().toArray();
    http().publish(topic, events(payloads));
    Reply batch = http().poll(consumer, max(200));
    assertEquals(200, batch.ackIds().size());

    String record = batchRecord(consumer, batch);
    assertTrue(record.length() < 100, record);
    String batchAckId = batch.json().getString("batchAckId");
    assertEquals(batch.ackIds().stream().map(a -> a + " ACKED").toList(), ackBatch(consumer, batchAckId));
    assertEquals(batch.ackIds().stream().map(a -> a + " ALREADY_ACKED").toList(), ackBatch(consumer, batchAckId));
    assertEquals(0, http().metadata(consumer).json().getLong("unacked"));
  }

  @Test
  @DisplayName("a short batch record of a redelivery, a gap in a copy, another copy and a run names each delivery: its batchAckId acks exactly those")
  void shortBatchRecordOfMixedDeliveries() {
    String topic = unique("mixed");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events("a1", "a2", "a3"));
    List<String> first = http().poll(consumer, max(2)).ackIds();
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(first.get(0))).put("action", "REQUEUE").put("delayMs", 0)).status());
    http().publish(topic, events("b1", "b2", "b3"));
    Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 5000));
    // a1 again (its second delivery), a3 (a2 is out), then b1..b3: a copy of its own, in a run
    assertEquals(List.of("a1", "a3", "b1", "b2", "b3"), batch.events().stream()
        .map(event -> ((JsonObject) event).getString("payload")).toList());
    assertTrue(batchRecord(consumer, batch).startsWith("~"), batchRecord(consumer, batch));

    assertEquals(batch.ackIds().stream().map(a -> a + " ACKED").toList(),
        ackBatch(consumer, batch.json().getString("batchAckId")));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("unacked"), "a2 is still out");
    assertEquals(Map.of(first.get(1), "ACKED"), statuses(http().ack(consumer, first.get(1))));
    assertEquals(Map.of(first.get(0), "EXPIRED"), statuses(http().ack(consumer, first.get(0))));
  }

  @Test
  @DisplayName("a batch key in the long form (written by a node of the packed layout) is still acked by its batchAckId")
  void longBatchRecord() {
    String topic = unique("long");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(consumer, max(3));
    String batchAckId = batch.json().getString("batchAckId");
    StringBuilder record = new StringBuilder(batch.ackIds().get(0).split("\\.")[3].substring(0, 16));
    for (String ackId : batch.ackIds()) {
      String[] parts = ackId.split("\\.");
      record.append(' ').append(parts[0]).append(' ').append(parts[1]).append(' ').append(parts[2])
          .append(' ').append(parts[3].substring(16));
    }
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg(Keys.batch(consumer, batchAckId)).arg(record.toString()));
    assertEquals(batch.ackIds().stream().map(a -> a + " ACKED").toList(), ackBatch(consumer, batchAckId));
  }

  @Test
  @DisplayName("an event acked several times in one request (its ackId twice, and its batch) is ACKED once, ALREADY_ACKED after")
  void repeatsInOneRequestAckOnce() {
    String topic = unique("repeats");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    Reply batch = http().poll(consumer, max(10));
    String first = batch.ackIds().get(0);

    Reply reply = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("ackIds", new JsonArray().add(first).add(first))
        .put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId"))));
    Map<String, String> results = statuses(reply);
    assertEquals("ACKED,ALREADY_ACKED,ALREADY_ACKED", results.get(first));
    assertEquals("ACKED", results.get(batch.ackIds().get(1)));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("unacked"));
    assertEquals(2, metadata.getJsonObject("totals").getLong("acked"));
    assertEquals(0, metadata.getLong("spooledBytes"));
  }

  @Test
  @DisplayName("another consumer's ackIds and batchAckIds are UNKNOWN and ack nothing")
  void otherConsumersAckIdsAreUnknown() {
    String topic = unique("shared");
    String mine = consumer(new JsonObject(), topic);
    String theirs = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    Reply batch = http().poll(theirs, max(10));
    String ackId = batch.ackIds().get(0);

    assertEquals(Map.of(ackId, "UNKNOWN"), statuses(http().ack(mine, ackId)));
    Reply byBatch = http().post("/v1/consumers/" + mine + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(batch.json().getString("batchAckId"))));
    assertEquals("UNKNOWN", byBatch.results().getJsonObject(0).getString("status"));
    assertEquals(1, http().metadata(theirs).json().getLong("unacked"));
    assertEquals(Map.of(ackId, "ACKED"), statuses(http().ack(theirs, ackId)));
  }

  @Test
  @DisplayName("after a redelivery the earlier ackId is EXPIRED and only the latest one acks; once it is acked the earlier one is still EXPIRED, the latest ALREADY_ACKED")
  void earlierDeliveryExpired() {
    String topic = unique("expired");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, event(1));
    String firstAckId = http().poll(consumer, max(1)).ackIds().get(0);
    Reply again = await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
        .until(() -> http().poll(consumer, max(1)), r -> r.events().size() == 1);
    String secondAckId = again.ackIds().get(0);

    assertEquals(Map.of(firstAckId, "EXPIRED"), statuses(http().ack(consumer, firstAckId)));
    assertEquals(1, http().metadata(consumer).json().getLong("unacked"));
    assertEquals(Map.of(secondAckId, "ACKED"), statuses(http().ack(consumer, secondAckId)));
    assertEquals(Map.of(firstAckId, "EXPIRED"), statuses(http().ack(consumer, firstAckId)));
    assertEquals(Map.of(secondAckId, "ALREADY_ACKED"), statuses(http().ack(consumer, secondAckId)));
  }

  @Test
  @DisplayName("once the latest delivery is acked, an earlier delivery's ackId is EXPIRED for acks, nacks and extends, in the same request too; after a redrive as well")
  void earlierDeliveryExpiredAfterTheAck() {
    String topic = unique("settled");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    String first = http().poll(consumer, max(1)).ackIds().get(0);
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(first)).put("action", "REQUEUE").put("delayMs", 0)).status());
    Reply again = http().poll(consumer, new JsonObject().put("maxEvents", 1).put("waitMs", 5000));
    String second = again.ackIds().get(0);
    String batchAckId = again.json().getString("batchAckId");

    Reply both = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("ackIds", new JsonArray().add(second).add(first).add(second)));
    assertEquals("ACKED,ALREADY_ACKED", statuses(both).get(second));
    assertEquals("EXPIRED", statuses(both).get(first));
    assertEquals(Map.of(first, "EXPIRED"), statuses(http().ack(consumer, first)));
    assertEquals("ALREADY_ACKED", http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray().add(batchAckId))).results().getJsonObject(0).getString("status"));
    assertEquals("EXPIRED", http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(first)).put("action", "REJECT")).results().getJsonObject(0).getString("status"));
    assertEquals("EXPIRED", http().post("/v1/consumers/" + consumer + "/extend", new JsonObject()
        .put("ackIds", new JsonArray().add(first)).put("extendMs", 5000)).results().getJsonObject(0).getString("status"));

    // rejected, redriven, handed out with deliveryCount 1 again and acked: the first hand-out's ackId is EXPIRED
    http().publish(topic, event(2));
    String rejected = http().poll(consumer, max(1)).ackIds().get(0);
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(rejected)).put("action", "REJECT")).status());
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/errors/redrive", new JsonObject().put("all", true)).status());
    Reply redriven = http().poll(consumer, max(1));
    assertEquals(1, redriven.events().getJsonObject(0).getInteger("deliveryCount"));
    String latest = redriven.ackIds().get(0);
    assertEquals(Map.of(latest, "ACKED"), statuses(http().ack(consumer, latest)));
    assertEquals(Map.of(rejected, "EXPIRED"), statuses(http().ack(consumer, rejected)));
    assertEquals(Map.of(latest, "ALREADY_ACKED"), statuses(http().ack(consumer, latest)));
  }

  @Test
  @DisplayName("an event acked from its error queue: its delivery's ackId is DEAD_LETTERED, not ALREADY_ACKED")
  void ackedFromItsQueue() {
    String topic = unique("queued");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    String delivered = http().poll(consumer, max(1)).ackIds().get(0);
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray().add(delivered)).put("action", "REJECT")).status());
    Reply queued = http().post("/v1/consumers/" + consumer + "/errors/poll", new JsonObject());
    String queueAckId = queued.events().getJsonObject(0).getString("ackId");
    assertEquals("ACKED", http().post("/v1/consumers/" + consumer + "/errors/acks", new JsonObject()
        .put("ackIds", new JsonArray().add(queueAckId))).results().getJsonObject(0).getString("status"));
    assertEquals(Map.of(delivered, "DEAD_LETTERED"), statuses(http().ack(consumer, delivered)));
  }

  @Test
  @DisplayName("an ack after the deadline is ACKED while the event was not handed out again")
  void lateAckStillCounts() {
    String topic = unique("late");
    String consumer = consumer(fastRedelivery(), topic);
    http().publish(topic, event(1));
    String ackId = http().poll(consumer, max(1)).ackIds().get(0);
    await().atMost(Duration.ofSeconds(15)).until(() -> http().metadata(consumer).json().getLong("stale") == 1);
    assertEquals(Map.of(ackId, "ACKED"), statuses(http().ack(consumer, ackId)));
    assertEquals(List.of(), http().poll(consumer, max(1)).eventIds());
  }

  @Test
  @DisplayName("acks through one node of deliveries from another node work the same")
  void ackThroughOtherNode() {
    String topic = unique("cross");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    Reply batch = nodeA.http().poll(consumer, max(10));
    assertEquals(Map.of(batch.ackIds().get(0), "ACKED", batch.ackIds().get(1), "ACKED"),
        statuses(nodeB.http().ack(consumer, batch.ackIds().toArray(String[]::new))));
  }

  @Test
  @DisplayName("bad ack bodies get INVALID_REQUEST naming the field; unknown consumers 404")
  void badAckRequests() {
    String consumer = consumer(new JsonObject(), unique("badack"));
    Reply empty = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject());
    assertEquals(400, empty.status());
    Reply wrongType = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("ackIds", "x"));
    assertEquals(400, wrongType.status());
    assertEquals("ackIds", wrongType.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply tooMany = http().ack(consumer, java.util.Collections.nCopies(1001, "x").toArray(String[]::new));
    assertEquals(400, tooMany.status());
    assertEquals("ackIds", tooMany.json().getJsonObject("error").getJsonObject("details").getString("field"));
    Reply tooManyBatches = http().post("/v1/consumers/" + consumer + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray(java.util.Collections.nCopies(11, "0".repeat(32)))));
    assertEquals(400, tooManyBatches.status());
    assertEquals(200, http().ack(consumer, java.util.Collections.nCopies(1000, "x").toArray(String[]::new)).status());
    Reply unknown = http().ack("no-such-consumer", "x");
    assertEquals(404, unknown.status());
    assertEquals("NOT_FOUND", unknown.errorCode());
  }
}
