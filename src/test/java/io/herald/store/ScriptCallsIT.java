package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class ScriptCallsIT {

  /**
   * Publishes, polls and acks one event through a node on {@code redis}, acks it again (the ack
   * memory), and nacks a second one and reads its history (the memory's histories).
   */
  private static void publishPollAck(TestRedis redis) {
    try (TestNode node = TestNode.start(redis)) {
      Http http = node.http();
      String name = "calls-" + System.nanoTime();
      assertEquals(201, http.putConsumer(name, new JsonObject().put("topics", new JsonArray().add(name))).status());
      http.publish(name, new JsonObject().put("payload", 1));
      Reply batch = http.poll(name, new JsonObject().put("waitMs", 5000));
      assertEquals(1, batch.ackIds().size(), batch.body());
      assertEquals("ACKED", http.ack(name, batch.ackIds().get(0)).results().getJsonObject(0).getString("status"));
      assertEquals("ALREADY_ACKED", http.ack(name, batch.ackIds().get(0)).results().getJsonObject(0).getString("status"));

      http.publish(name, new JsonObject().put("payload", 2));
      Reply second = http.poll(name, new JsonObject().put("waitMs", 5000));
      assertEquals(200, http.post("/v1/consumers/" + name + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray(second.ackIds())).put("action", "REQUEUE").put("delayMs", 60_000)).status());
      Reply history = http.get("/v1/consumers/" + name + "/events/" + second.eventIds().get(0));
      assertEquals("REQUEUED", history.json().getJsonArray("deliveries").getJsonObject(0).getString("outcome"),
          history.body());
    }
  }

  @Test
  @DisplayName("on Redis before 7 (the embedded 6.2) the scripts go by SHA, library and all")
  void bySha() {
    try (TestRedis redis = TestRedis.startEmbedded()) {
      assertTrue(RedisCli.majorVersion(redis.url()) < 7, "the embedded Redis is expected to predate functions");
      publishPollAck(redis);
      assertTrue(RedisCli.calls(redis.url(), "evalsha") > 0);
    }
  }

  @Test
  @DisplayName("on Redis 7 the per-consumer scripts are functions of one library, loaded again when Redis lost it")
  void asFunctions() {
    try (TestRedis redis = TestRedis.start()) {
      publishPollAck(redis);
      if (RedisCli.majorVersion(redis.url()) < 7) {
        // no Redis 7 on this machine's PATH: what runs is the SHA path, as above
        assertEquals(0, RedisCli.calls(redis.url(), "fcall"));
        return;
      }
      long functions = RedisCli.calls(redis.url(), "fcall");
      assertTrue(functions > 0);
      List<String> libraries = RedisCli.send(redis.url(), Request.cmd(Command.FUNCTION).arg("LIST")).stream()
          .map(library -> library.get("library_name").toString()).toList();
      assertEquals(List.of(Script.LIBRARY.name()), libraries);
      RedisCli.send(redis.url(), Request.cmd(Command.FUNCTION).arg("FLUSH"));
      publishPollAck(redis);
      assertTrue(RedisCli.calls(redis.url(), "fcall") > functions);
      assertEquals(List.of(Script.LIBRARY.name()), RedisCli.send(redis.url(), Request.cmd(Command.FUNCTION).arg("LIST"))
          .stream().map(library -> library.get("library_name").toString()).toList());
    }
  }

  @Test
  @DisplayName("out of memory (noeviction), the functions that settle or read still run, and a publish is refused")
  void outOfMemory() {
    try (TestRedis redis = TestRedis.start(); TestNode node = TestNode.start(redis)) {
      Http http = node.http();
      String name = "oom-" + System.nanoTime();
      assertEquals(201, http.putConsumer(name, new JsonObject().put("topics", new JsonArray().add(name))).status());
      http.publish(name, new JsonObject().put("payload", 1));
      String ackId = http.poll(name, new JsonObject().put("waitMs", 5000)).ackIds().get(0);
      RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("maxmemory-policy").arg("noeviction"));
      RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("maxmemory").arg(1));
      try {
        Reply refused = http.publish(name, new JsonObject().put("payload", 2));
        assertEquals(503, refused.status(), refused.body());
        assertEquals(200, http.metadata(name).status());
        if (RedisCli.majorVersion(redis.url()) >= 7) {
          // a function without flags would be refused before it ran; EVAL scripts fail at their first growing write
          assertEquals("ACKED", http.ack(name, ackId).results().getJsonObject(0).getString("status"));
        }
      } finally {
        RedisCli.send(redis.url(), Request.cmd(Command.CONFIG).arg("SET").arg("maxmemory").arg(0));
      }
    }
  }
}
