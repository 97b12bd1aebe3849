package io.herald.deadletter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class FailedEventsIT extends GatewayTest {

  /** A consumer whose events go to the dead-letter queue at their first nack; returns its name. */
  private static String deadLettering(String topic) {
    return consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
  }

  /** Polls every event of {@code consumer} and nacks each with {@code action} and a reason. */
  private static void failAll(String consumer, String action) {
    Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 100));
    Reply nacked = http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds())).put("action", action).put("reason", "cannot parse"));
    assertEquals(200, nacked.status(), nacked.body());
  }

  private static Reply read(String consumer, String queue) {
    Reply reply = nodeB.http().post("/v1/consumers/" + consumer + "/" + queue + "/poll", new JsonObject().put("maxEvents", 10));
    assertEquals(200, reply.status(), reply.body());
    return reply;
  }

  @Test
  @DisplayName("ackIds never repeat: after a redrive, the earlier delivery's ackId and batchAckId and the earlier queue read's ackId settle nothing")
  void ackIdsNeverRepeatAcrossRedrive() {
    String topic = unique("redrive");
    String consumer = deadLettering(topic);
    String path = "/v1/consumers/" + consumer;
    http().publish(topic, events(1));
    Reply first = http().poll(consumer, new JsonObject());
    http().post(path + "/nacks", new JsonObject().put("ackIds", new JsonArray(first.ackIds())).put("action", "REQUEUE"));
    String firstRead = read(consumer, "dead-letters").events().getJsonObject(0).getString("ackId");
    http().post(path + "/dead-letters/redrive", new JsonObject().put("all", true));

    Reply second = http().poll(consumer, new JsonObject());
    assertEquals(1, second.events().getJsonObject(0).getInteger("deliveryCount"));
    assertNotEquals(first.ackIds(), second.ackIds());
    Reply byOldBatch = http().post(path + "/acks", new JsonObject()
        .put("batchAckIds", new JsonArray().add(first.json().getString("batchAckId"))));
    assertEquals("EXPIRED", byOldBatch.results().getJsonObject(0).getString("status"));
    assertEquals("EXPIRED", http().ack(consumer, first.ackIds().get(0)).results().getJsonObject(0).getString("status"));

    // dead-lettered again: the queue read's ackId is new too
    http().post(path + "/nacks", new JsonObject().put("ackIds", new JsonArray(second.ackIds())).put("action", "REQUEUE"));
    String secondRead = read(consumer, "dead-letters").events().getJsonObject(0).getString("ackId");
    assertNotEquals(firstRead, secondRead);
    Reply oldRead = http().post(path + "/dead-letters/acks", new JsonObject().put("ackIds", new JsonArray().add(firstRead)));
    assertEquals("UNKNOWN", oldRead.results().getJsonObject(0).getString("status"));
    assertEquals(1, http().metadata(consumer).json().getLong("deadLetters"));
    Reply newRead = http().post(path + "/dead-letters/acks", new JsonObject().put("ackIds", new JsonArray().add(secondRead)));
    assertEquals("ACKED", newRead.results().getJsonObject(0).getString("status"));
  }

  @Test
  @DisplayName("a dead-letter entry whose event is gone (left by an older version) is cleared by a redrive, which goes on with the real ones")
  void redriveClearsEntriesWithoutEvent() {
    String topic = unique("ghost");
    String consumer = deadLettering(topic);
    http().publish(topic, events(1));
    failAll(consumer, "REQUEUE");
    String ghost = "000000000001-0000000000000001";
    String prefix = "herald:{c:" + consumer + "}:";
    Runnable leaveGhost = () -> {
      RedisCli.send(redis.url(), Request.cmd(Command.ZADD).arg(prefix + "dead").arg(0).arg(ghost));
      RedisCli.hset(redis.url(), prefix + "failures", ghost, "{\"deadLetterReason\":\"TTL_EXPIRED\",\"deliveryCount\":0}");
    };
    leaveGhost.run();
    long scriptErrors = RedisCli.errors(redis.url(), "ERR");

    Reply named = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(ghost)));
    assertEquals(200, named.status(), named.body());
    assertEquals("UNKNOWN", named.results().getJsonObject(0).getString("status"));
    leaveGhost.run();
    Reply all = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive", new JsonObject().put("all", true));
    assertEquals(1, all.json().getInteger("redriven"), all.body());
    assertEquals(List.of(1), http().poll(consumer, new JsonObject()).events().stream()
        .map(e -> ((JsonObject) e).getInteger("payload")).toList());
    assertEquals(0, http().metadata(consumer).json().getLong("deadLetters"));
    assertEquals(scriptErrors, RedisCli.errors(redis.url(), "ERR"), "no script failed inside Redis");
  }

  @Test
  @DisplayName("a redriven event counts against its consumer's own quota again: one that does not fit stays, QUOTA_EXCEEDED")
  void redriveRespectsConsumerQuota() {
    String topic = unique("own");
    String consumer = consumer(new JsonObject().put("quotaEvents", 1)
        .put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    String dead = http().publish(topic, event(1)).results().getJsonObject(0).getString("eventId");
    failAll(consumer, "REQUEUE");
    http().publish(topic, event(2));
    String path = "/v1/consumers/" + consumer + "/dead-letters/redrive";

    Reply refused = http().post(path, new JsonObject().put("eventIds", new JsonArray().add(dead)));
    assertEquals(List.of("QUOTA_EXCEEDED"), redriveStatuses(refused));
    assertEquals(0, refused.json().getLong("redriven"));
    assertEquals(1, http().metadata(consumer).json().getLong("deadLetters"));
    assertEquals(0, http().post(path, new JsonObject().put("all", true)).json().getLong("redriven"));

    http().ack(consumer, http().poll(consumer, max(10)).ackIds().get(0));
    assertEquals(List.of("REDRIVEN"), redriveStatuses(http().post(path, new JsonObject().put("eventIds", new JsonArray().add(dead)))));
    assertEquals(1, http().metadata(consumer).json().getLong("spooledEvents"));
  }

  private static List<String> redriveStatuses(Reply reply) {
    assertEquals(200, reply.status(), reply.body());
    return reply.results().stream().map(r -> ((JsonObject) r).getString("status")).toList();
  }

  @Test
  @DisplayName("dead letters are read with why they are there, acked away, and redriven with deliveryCount reset")
  void deadLetters() {
    String topic = unique("dlq");
    String consumer = deadLettering(topic);
    http().publish(topic, events(1, 2, 3));
    failAll(consumer, "REQUEUE");

    Reply dead = read(consumer, "dead-letters");
    assertEquals(3, dead.events().size());
    JsonObject first = dead.events().getJsonObject(0);
    assertEquals(1, first.getInteger("payload"));
    assertEquals("MAX_DELIVERIES", first.getString("deadLetterReason"));
    assertEquals(1, first.getInteger("deliveryCount"));
    assertEquals("cannot parse", first.getString("reason"));

    Reply acked = http().post("/v1/consumers/" + consumer + "/dead-letters/acks",
        new JsonObject().put("ackIds", new JsonArray().add(first.getString("ackId"))));
    assertEquals("ACKED", acked.results().getJsonObject(0).getString("status"));
    assertEquals(2, read(consumer, "dead-letters").events().size());

    String second = dead.events().getJsonObject(1).getString("eventId");
    Reply redriven = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(second).add("nope")));
    assertEquals(List.of("REDRIVEN", "UNKNOWN"), redriven.results().stream()
        .map(r -> ((JsonObject) r).getString("status")).toList());
    JsonObject again = http().poll(consumer, new JsonObject()).events().getJsonObject(0);
    assertEquals(second, again.getString("eventId"));
    assertEquals(1, again.getInteger("deliveryCount"), "deliveryCount starts again");

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("deadLetters"));
    assertEquals(1, metadata.getLong("unacked"));
  }

  @Test
  @DisplayName("redrive all empties a queue back into the consumer's, in arrival order")
  void redriveAll() {
    String topic = unique("all");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 1000).put("maxUnacked", 2000), topic);
    JsonArray events = new JsonArray();
    for (int i = 0; i < 1200; i++) {
      events.add(new JsonObject().put("payload", i));
    }
    http().publish(topic, new JsonObject().put("events", new JsonArray(events.getList().subList(0, 1000))));
    http().publish(topic, new JsonObject().put("events", new JsonArray(events.getList().subList(1000, 1200))));
    for (int round = 0; round < 2; round++) {
      Reply batch = http().poll(consumer, new JsonObject().put("maxEvents", 1000));
      http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray(batch.ackIds())).put("action", "REJECT"));
    }
    assertEquals(1200, http().metadata(consumer).json().getLong("errors"));

    Reply redriven = http().post("/v1/consumers/" + consumer + "/errors/redrive", new JsonObject().put("all", true));
    assertEquals(1200, redriven.json().getLong("redriven"));
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("errors"));
    assertEquals(1200, metadata.getLong("backlog"));
    assertEquals(0, http().poll(consumer, new JsonObject().put("maxEvents", 1)).events().getJsonObject(0).getInteger("payload"));
  }

  @Test
  @DisplayName("the error queue holds rejected events with their reason; a batch is acked by its batchAckId")
  void errorQueue() {
    String topic = unique("err");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events("a", "b"));
    failAll(consumer, "REJECT");
    Reply errors = read(consumer, "errors");
    assertEquals(2, errors.events().size());
    assertNull(errors.events().getJsonObject(0).getString("deadLetterReason"));
    assertEquals("cannot parse", errors.events().getJsonObject(0).getString("reason"));
    assertEquals(0, read(consumer, "dead-letters").events().size());

    Reply acked = http().post("/v1/consumers/" + consumer + "/errors/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(errors.json().getString("batchAckId"))));
    assertEquals(List.of("ACKED", "ACKED"), acked.results().stream()
        .map(r -> ((JsonObject) r).getString("status")).toList());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("errors"));
    assertEquals(0, metadata.getLong("spooledBytes"));
  }

  @Test
  @DisplayName("a redrive needs eventIds or all:true, not both")
  void redriveValidated() {
    String consumer = consumer(new JsonObject(), unique("v"));
    Reply neither = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive", new JsonObject());
    assertEquals(400, neither.status());
    Reply both = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("all", true).put("eventIds", new JsonArray().add("x")));
    assertEquals(400, both.status());
  }

  @Test
  @DisplayName("a redrive naming one eventId twice redrives it once, and both rows say REDRIVEN")
  void redriveOfARepeatedEventId() {
    String topic = unique("twice");
    String consumer = deadLettering(topic);
    http().publish(topic, events(1));
    failAll(consumer, "REJECT");
    String eventId = read(consumer, "errors").events().getJsonObject(0).getString("eventId");
    Reply redriven = http().post("/v1/consumers/" + consumer + "/errors/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(eventId).add(eventId)));
    assertEquals(200, redriven.status(), redriven.body());
    assertEquals(1, redriven.json().getInteger("redriven"));
    assertEquals(List.of("REDRIVEN", "REDRIVEN"), redriven.results().stream()
        .map(r -> ((JsonObject) r).getString("status")).toList());
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
  }
}
