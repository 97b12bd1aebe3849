package io.herald.admin;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
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

@Timeout(30)
class ConsumerAdminIT extends GatewayTest {

  @Test
  @DisplayName("PUT creates a consumer with defaults filled in; GET and the list show it on every node")
  void createAndRead() {
    String name = unique("admin");
    Reply created = http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add("a/>")));
    assertEquals(201, created.status());
    JsonObject expected = new JsonObject().put("name", name).put("topics", new JsonArray().add("a/>"))
        .put("ackMode", "explicit").put("ackTimeoutMs", 30000).put("maxPollRecords", 10).put("maxBatchBytes", 4194304)
        .put("maxUnacked", 500)
        .put("retentionMs", 604800000L).put("redelivery", new JsonObject().put("initialDelayMs", 1000)
            .put("multiplier", 2.0).put("maxDelayMs", 60000).put("maxDeliveries", 0)).put("redeliverOnDisconnect", false)
        .put("rateLimit", new JsonObject().put("tps", 100).put("blockMs", 45000).put("graceMs", 15000)
            .put("noticeIntervalMs", 2000).put("closeMode", "drop"))
        .putNull("maxTtlMs").put("deadLetter", true).put("errorQueue", true).put("enabled", true)
        .putNull("quotaBytes").putNull("quotaEvents").put("rejectPublishWhenRefused", true).putNull("namespace")
        .put("ordering", "none");
    assertEquals(expected, created.json());
    assertEquals(expected, nodeB.http().get("/v1/admin/consumers/" + name).json());
    JsonArray all = nodeB.http().get("/v1/admin/consumers").json().getJsonArray("consumers");
    assertTrue(all.stream().anyMatch(c -> ((JsonObject) c).getString("name").equals(name)));
  }

  @Test
  @DisplayName("a consumer created through one node receives events published through another at once")
  void otherNodeSpoolsForNewConsumer() {
    String topic = unique("fresh");
    String name = unique("admin");
    nodeA.http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add(topic)));
    JsonObject result = nodeB.http().publish(topic, event(1)).results().getJsonObject(0);
    // node B learns of the consumer by pub/sub; the publish that races with it may still miss it
    if (result.getInteger("matched") == 0) {
      await().atMost(Duration.ofSeconds(5)).until(() ->
          nodeB.http().publish(topic, event(1)).results().getJsonObject(0).getInteger("matched") == 1);
    }
    assertEquals(1, nodeA.http().poll(name, max(10)).events().size());
  }

  @Test
  @DisplayName("PUT replaces settings and keeps spooled events; DELETE removes consumer and events")
  void replaceAndDelete() {
    String topic = unique("replace");
    String name = consumer(new JsonObject(), topic);
    http().publish(topic, event(1));
    String handedOut = http().poll(name, max(1)).eventIds().get(0);
    http().publish(topic, event(1));
    Reply replaced = http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add(topic))
        .put("maxPollRecords", 50));
    assertEquals(200, replaced.status());
    assertEquals(50, nodeB.http().get("/v1/admin/consumers/" + name).json().getInteger("maxPollRecords"));
    assertEquals(1, http().metadata(name).json().getLong("backlog"));

    assertEquals(204, nodeB.http().delete("/v1/admin/consumers/" + name).status());
    assertEquals(404, http().get("/v1/consumers/" + name + "/events/" + handedOut).status());
    assertEquals(404, http().get("/v1/admin/consumers/" + name).status());
    assertEquals("NOT_FOUND", http().poll(name, max(1)).errorCode());
    assertEquals(404, http().delete("/v1/admin/consumers/" + name).status());
    assertEquals(0, http().publish(topic, event(2)).results().getJsonObject(0).getInteger("matched"));
  }

  @Test
  @DisplayName("deleting a consumer that holds 5,000 events costs Redis a few commands, and leaves only its batch keys, which expire")
  void deleteIsBoundedWork() {
    String topic = unique("big");
    String name = consumer(new JsonObject().put("maxPollRecords", 1000).put("maxUnacked", 5000), topic);
    for (int i = 0; i < 5; i++) {
      http().publish(topic, events(new Object[1000]));
    }
    Reply batch = http().poll(name, max(1000));
    http().post("/v1/consumers/" + name + "/nacks", new JsonObject()
        .put("ackIds", new JsonArray(batch.ackIds().subList(0, 10))).put("action", "REQUEUE").put("reason", "later"));

    long before = RedisCli.calls(redis.url());
    assertEquals(204, http().delete("/v1/admin/consumers/" + name).status());
    long commands = RedisCli.calls(redis.url()) - before;
    // the delete's own handful, the INFO call and what the nodes' schedulers ran meanwhile
    assertTrue(commands < 200, commands + " commands");
    assertEquals(404, nodeB.http().get("/v1/admin/consumers/" + name).status());

    Response keys = RedisCli.send(redis.url(), Request.cmd(Command.SCAN).arg(0).arg("MATCH")
        .arg("herald:{c:" + name + "}:*").arg("COUNT").arg(100_000));
    assertEquals("0", keys.get(0).toString());
    // the poll's batch key; the nacked events' histories went with the consumer's memory
    assertEquals(1, keys.get(1).size(), "left behind: " + keys.get(1));
    for (Response key : keys.get(1)) {
      assertTrue(key.toString().contains("}:batch:"), key.toString());
      long ttl = RedisCli.send(redis.url(), Request.cmd(Command.PTTL).arg(key.toString())).toLong();
      assertTrue(ttl > 0, key + " never expires");
    }
  }

  @Test
  @DisplayName("a consumer created again under a deleted one's name inherits nothing of it")
  void recreatedConsumerStartsAfresh() {
    String topic = unique("again");
    String name = consumer(new JsonObject(), topic);
    http().publish(topic, event("old"));
    Reply old = http().poll(name, max(1));
    assertEquals("ACKED", http().ack(name, old.ackIds().get(0)).results().getJsonObject(0).getString("status"));
    assertEquals(204, http().delete("/v1/admin/consumers/" + name).status());

    assertEquals(201, http().putConsumer(name, new JsonObject().put("topics", new JsonArray().add(topic))).status());
    assertEquals("UNKNOWN", http().ack(name, old.ackIds().get(0)).results().getJsonObject(0).getString("status"));
    // the new incarnation's first event has the same arrival sequence as the old acked one
    // retention cannot be set below 60 s; shorten it in Redis so the event leaves unacked soon
    RedisCli.hset(redis.url(), "herald:{c:" + name + "}:meta", "retentionMs", "1500");
    http().publish(topic, event("new"));
    String ackId = http().poll(name, max(1)).ackIds().get(0);
    await().atMost(Duration.ofSeconds(10)).until(() ->
        http().metadata(name).json().getJsonObject("totals").getLong("expired") == 1);
    assertEquals("UNKNOWN", http().ack(name, ackId).results().getJsonObject(0).getString("status"),
        "an event that left unacked was never acked, whatever the old consumer did");
  }

  @Test
  @DisplayName("out-of-range and unknown settings are refused naming every field")
  void refusesBadSettings() {
    Reply reply = http().putConsumer(unique("bad"), new JsonObject().put("topics", new JsonArray().add("a/>/b"))
        .put("maxUnacked", 0).put("redelivery", new JsonObject().put("multiplier", 11))
        .put("redeliverOnDisconnect", "yes").put("colour", "red").put("ordering", "sideways")
        .put("rateLimit", new JsonObject().put("blockMs", 5000).put("graceMs", 6000).put("closeMode", "slam")));
    assertEquals(400, reply.status());
    assertEquals("INVALID_REQUEST", reply.errorCode());
    JsonArray errors = reply.json().getJsonObject("error").getJsonObject("details").getJsonArray("errors");
    assertEquals(List.of("topics", "maxUnacked", "redelivery.multiplier", "redeliverOnDisconnect",
            "rateLimit.graceMs", "rateLimit.closeMode", "ordering", "colour"),
        errors.stream().map(e -> ((JsonObject) e).getString("field")).toList());
    Reply badName = http().putConsumer("bad%20name", new JsonObject().put("topics", new JsonArray().add("a")));
    assertEquals(400, badName.status());
  }

  @Test
  @DisplayName("metadata counts backlog, unacked, stale, ages and totals")
  void metadata() {
    String topic = unique("meta");
    String name = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Reply batch = http().poll(name, max(2));
    http().ack(name, batch.ackIds().get(0));
    JsonObject metadata = http().metadata(name).json();
    assertEquals(name, metadata.getString("consumer"));
    assertEquals(1, metadata.getLong("backlog"));
    assertEquals(1, metadata.getLong("unacked"));
    assertEquals(0, metadata.getLong("stale"));
    assertTrue(metadata.getLong("oldestBacklogAgeMs") >= 0);
    assertTrue(metadata.getLong("oldestUnackedAgeMs") >= 0);
    assertEquals(new JsonObject().put("published", 3).put("delivered", 2).put("acked", 1).put("redelivered", 0)
        .put("deadLettered", 0).put("rejected", 0).put("dropped", 0).put("expired", 0).put("throttled", 0)
        .put("blocks", 0).put("discarded", 0), metadata.getJsonObject("totals"));
    assertEquals(0, metadata.getLong("scheduled"));
    assertEquals(0, metadata.getLong("deadLetters"));
    assertEquals(0, metadata.getLong("errors"));
    assertEquals(new JsonObject().put("blocked", false).putNull("blockedUntil"), metadata.getJsonObject("throttle"));
    assertEquals(30000, metadata.getJsonObject("config").getInteger("ackTimeoutMs"));
  }

  @Test
  @DisplayName("unknown routes, methods and consumers answer in the error envelope")
  void errorEnvelope() {
    Reply route = http().get("/v1/nowhere");
    assertEquals(404, route.status());
    assertEquals("NOT_FOUND", route.errorCode());
    Reply method = http().delete("/v1/consumers/x/poll");
    assertEquals(405, method.status());
    Reply consumer = http().metadata("nobody-here");
    assertEquals(404, consumer.status());
    assertEquals("nobody-here", consumer.json().getJsonObject("error").getJsonObject("details").getString("consumer"));
    Reply malformed = http().post("/v1/consumers/x/poll", "{not json");
    assertEquals(400, malformed.status());
    assertEquals("INVALID_REQUEST", malformed.errorCode());
  }

  @Test
  @DisplayName("health: live always, ready while Redis answers")
  void health() {
    assertEquals(200, http().get("/health/live").status());
    assertEquals(200, http().get("/health/ready").status());
  }
}
