package io.herald.upgrade;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.copy.Copies;
import io.herald.store.Keys;
import io.herald.testing.Http;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A spool written by the release before the shared layout (0.11, commit 11d770d), recorded by
 * {@code src/test/resources/upgrade/record.sh}: three consumers with events waiting, handed out past
 * their deadline, behind their keys, delayed, dead-lettered and rejected. This version must deliver
 * all of them, inline and after the switch to the shared layout (docs/internals.md, "Upgrades").
 */
@Timeout(90)
class SpoolUpgradeIT {
  private static final String FIXTURE = "/upgrade/spool-0.11.jsonl";

  /**
   * Writes the recorded keys into {@code redis}. The fixture ages: its consumers' retention and
   * their expiry indexes are moved on by its age, and its delays are made to end now, so that what
   * it holds is as it was when recorded, whenever the test runs.
   */
  private static void load(TestRedis redis) throws IOException {
    try (BufferedReader lines = new BufferedReader(new InputStreamReader(
        SpoolUpgradeIT.class.getResourceAsStream(FIXTURE), StandardCharsets.UTF_8))) {
      long recordedAt = new JsonObject(lines.readLine()).getLong("recordedAtMs");
      long age = RedisCli.millis(redis.url()) - recordedAt;
      for (String line = lines.readLine(); line != null; line = lines.readLine()) {
        JsonObject entry = new JsonObject(line);
        String key = new String(bytes(entry.getString("key")), StandardCharsets.UTF_8);
        JsonArray value = "string".equals(entry.getString("type")) ? null : entry.getJsonArray("value");
        Request write = switch (entry.getString("type")) {
          case "string" -> Request.cmd(Command.SET).arg(key).arg(bytes(entry.getString("value")));
          case "hash" -> Request.cmd(Command.HSET).arg(key);
          case "zset" -> Request.cmd(Command.ZADD).arg(key);
          case "list" -> Request.cmd(Command.RPUSH).arg(key);
          case "set" -> Request.cmd(Command.SADD).arg(key);
          default -> throw new IllegalStateException(line);
        };
        for (int i = 0; value != null && i < value.size(); i++) {
          if (value.getValue(i) instanceof JsonArray pair) {
            if ("hash".equals(entry.getString("type"))) {
              String field = new String(bytes(pair.getString(0)), StandardCharsets.UTF_8);
              byte[] stored = bytes(pair.getString(1));
              if (key.endsWith(":meta") && field.equals("retentionMs")) {
                stored = String.valueOf(Long.parseLong(new String(stored, StandardCharsets.UTF_8)) + age).getBytes();
              }
              write.arg(field).arg(stored);
            } else {
              long score = (long) Double.parseDouble(pair.getString(1));
              score = key.endsWith(":expiry") ? score + age : key.endsWith(":delayed") ? recordedAt + age : score;
              write.arg(score).arg(bytes(pair.getString(0)));
            }
          } else {
            write.arg(bytes(value.getString(i)));
          }
        }
        RedisCli.send(redis.url(), write);
        long pttl = entry.getLong("pttl");
        if (pttl > 0) {
          RedisCli.send(redis.url(), Request.cmd(Command.PEXPIRE).arg(key).arg(pttl));
        }
      }
    }
  }

  private static byte[] bytes(String base64) {
    return Base64.getDecoder().decode(base64);
  }

  /** Polls and acks {@code consumer} until it had {@code count} events; answers them by payload, in order. */
  private static List<JsonObject> drain(Http http, String consumer, int count) {
    List<JsonObject> taken = new ArrayList<>();
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      Reply batch = http.poll(consumer, new JsonObject().put("maxEvents", 100).put("waitMs", 1000));
      assertEquals(200, batch.status(), batch.body());
      batch.events().forEach(event -> taken.add((JsonObject) event));
      if (!batch.ackIds().isEmpty()) {
        assertEquals(200, http.ack(consumer, batch.ackIds().toArray(String[]::new)).status());
      }
      return taken.size() >= count;
    });
    return taken;
  }

  private static String order(JsonObject event) {
    return event.getJsonObject("payload").getString("orderId");
  }

  private static JsonObject order(String orderId, String key) {
    return new JsonObject().put("events", new JsonArray().add(new JsonObject().put("key", key)
        .put("payload", new JsonObject().put("orderId", orderId))));
  }

  @Test
  @DisplayName("a spool written by the previous release is delivered whole, inline and then beside shared copies")
  void previousReleaseSpoolIsDelivered() throws IOException {
    try (TestRedis redis = TestRedis.start()) {
      load(redis);
      String newEvent;
      try (TestNode inline = TestNode.start(redis)) {
        Http http = inline.http();
        // the dead-letter and error queues as recorded, with their reasons
        Reply dead = http.post("/v1/consumers/failing/dead-letters/poll", new JsonObject());
        assertEquals(1, dead.events().size(), dead.body());
        JsonObject deadLetter = dead.events().getJsonObject(0);
        assertEquals("f-1", deadLetter.getJsonObject("payload").getString("n"));
        assertEquals("MAX_DELIVERIES", deadLetter.getString("deadLetterReason"));
        assertEquals("bad", deadLetter.getString("reason"));
        Reply errors = http.post("/v1/consumers/failing/errors/poll", new JsonObject());
        assertEquals("worse", errors.events().getJsonObject(0).getString("reason"));
        assertEquals(200, http.post("/v1/consumers/failing/dead-letters/redrive",
            new JsonObject().put("eventIds", new JsonArray().add(deadLetter.getString("eventId")))).status());
        List<String> failing = drain(http, "failing", 2).stream()
            .map(event -> event.getJsonObject("payload").getString("n")).sorted().toList();
        assertEquals(List.of("f-1", "f-3"), failing);
        // an existing spool stays inline until the operator switches it
        newEvent = http.publish("upgrade/orders", order("o-11", "k1")).results().getJsonObject(0).getString("eventId");
        assertTrue(RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg(Keys.consumer("billing").get(2))
            .arg(newEvent)).toString().startsWith("\""), "spooled inline");
      }
      RedisCli.send(redis.url(), Request.cmd(Command.SET).arg(Keys.LAYOUT).arg("shared"));
      try (TestNode shared = TestNode.start(redis)) {
        Http http = shared.http();
        String sharedEvent = http.publish("upgrade/orders", order("o-12", "k2")).results().getJsonObject(0)
            .getString("eventId");
        assertFalse(RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg(Keys.consumer("billing").get(2))
            .arg(sharedEvent)).toString().startsWith("\""), "a stub");

        // billing: o-1 was acked; o-2 and o-3 were out past their deadline, o-10 delayed
        List<JsonObject> billing = drain(http, "billing", 11);
        assertEquals(List.of("o-10", "o-11", "o-12", "o-2", "o-3", "o-4", "o-5", "o-6", "o-7", "o-8", "o-9"),
            billing.stream().map(SpoolUpgradeIT::order).sorted().toList());
        billing.stream().filter(event -> List.of("o-2", "o-3").contains(order(event)))
            .forEach(event -> assertEquals(2, event.getInteger("deliveryCount"), event.encode()));

        // audit orders by key: o-1 (k2) was out, the others of its key waited behind it
        Map<String, List<String>> byKey = new LinkedHashMap<>();
        drain(http, "audit", 12).forEach(event -> byKey.computeIfAbsent(String.valueOf(event.getString("key")),
            key -> new ArrayList<>()).add(order(event)));
        assertEquals(List.of("o-2", "o-4", "o-6", "o-8", "o-9", "o-11"), byKey.get("k1"));
        assertEquals(List.of("o-1", "o-3", "o-5", "o-7", "o-12"), byKey.get("k2"));
        assertEquals(List.of("o-10"), byKey.get("null"));

        for (String consumer : List.of("billing", "audit", "failing")) {
          JsonObject metadata = http.metadata(consumer).json();
          assertEquals(0, metadata.getLong("backlog") + metadata.getLong("unacked") + metadata.getLong("delayed"),
              metadata.encode());
        }
        assertEquals(0, http.metadata("billing").json().getLong("spooledBytes"));
        await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.send(redis.url(),
            Request.cmd(Command.EXISTS).arg(Keys.copy(Copies.copyOf(sharedEvent)))).toInteger() == 0);
      }
    }
  }
}
