package io.herald.quota;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.store.ScriptMarkers;
import io.herald.testing.FreezingProxy;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A consumer over its own quota that refuses for all (rejectPublishWhenRefused), while another
 * consumer of the topic waits in a long poll, ready to take the event at once.
 */
@Timeout(60)
class OwnQuotaRaceIT {
  private static TestRedis redis;
  private static FreezingProxy proxy;
  /** Reaches Redis through the proxy, whose answers a test may hold back. */
  private static TestNode publishing;
  /** Where the other consumer's long polls wait. */
  private static TestNode polling;

  @BeforeAll
  static void start() {
    redis = TestRedis.start();
    proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
    publishing = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())
        .put("timeoutMs", 20_000)));
    polling = TestNode.start(redis);
  }

  @AfterAll
  static void stop() throws Exception {
    polling.close();
    publishing.close();
    proxy.close();
    redis.close();
  }

  private static void putConsumer(String name, String topic, JsonObject settings) {
    assertEquals(201, polling.http().putConsumer(name, settings.copy().put("topics", new JsonArray().add(topic))).status());
    await().until(() -> publishing.http().get("/v1/admin/consumers/" + name).json().getJsonArray("topics") != null
        && publishing.http().get("/v1/admin/consumers/" + name).json().encode().equals(
            polling.http().get("/v1/admin/consumers/" + name).json().encode()));
  }

  private static CompletableFuture<Reply> parkedPoll(String consumer) {
    CompletableFuture<Reply> poll = CompletableFuture.supplyAsync(() -> polling.http().poll(consumer,
        new JsonObject().put("maxEvents", 10).put("waitMs", 3000)));
    await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.ZCARD).arg(Keys.waiters(consumer))).toInteger() == 1);
    return poll;
  }

  private static String arrivals(String consumer) {
    return RedisCli.send(redis.url(), Request.cmd(Command.HGET).arg("herald:{c:" + consumer + "}:meta").arg("seq")).toString();
  }

  @Test
  @DisplayName("an event a full consumer refuses for all is refused before any consumer takes it: the other consumer's parked poll never sees it")
  void refusedBeforeAnyoneTakesIt() {
    String full = "full-a";
    String other = "other-a";
    putConsumer(full, "race/a", new JsonObject().put("quotaEvents", 1));
    putConsumer(other, "race/a", new JsonObject());
    assertEquals(2, publishing.http().publish("race/a", new JsonObject().put("payload", 1)).results().getJsonObject(0)
        .getInteger("matched"));
    assertEquals(1, polling.http().poll(other, new JsonObject()).events().size());

    CompletableFuture<Reply> waiting = parkedPoll(other);
    Reply refused = publishing.http().publish("race/a", new JsonObject().put("payload", 2));
    JsonObject result = refused.results().getJsonObject(0);
    assertEquals("REJECTED", result.getString("status"), refused.body());
    assertEquals("QUOTA_EXCEEDED", result.getString("code"));
    assertEquals(full, result.getJsonObject("details").getString("consumer"));
    assertEquals(List.of(), waiting.join().events().getList());
    // nothing of it ever reached the other consumer: it counted one arrival, the first event
    assertEquals("1", arrivals(other));
    assertEquals(1, polling.http().metadata(full).json().getLong("spooledEvents"));
  }

  @Test
  @DisplayName("refused in its own spool call (its quota changed under the node), and handed out by another consumer before it could be taken back: the event is confirmed and the full consumer holds it too")
  void handedOutBeforeTheTakeBack() {
    String full = "full-b";
    String other = "other-b";
    putConsumer(full, "race/b", new JsonObject());
    putConsumer(other, "race/b", new JsonObject());
    assertEquals(200, publishing.http().publish("race/b", new JsonObject().put("payload", 1)).status());
    assertEquals(1, polling.http().poll(other, new JsonObject()).events().size());
    // a quota the nodes do not know of: the consumer's spool call refuses, after the others took the event
    RedisCli.hset(redis.url(), "herald:{c:" + full + "}:meta", "quotaEvents", "1");

    CompletableFuture<Reply> waiting = parkedPoll(other);
    // the spool calls run; their answers are held until the other consumer has handed the event out
    proxy.stallAfter(ScriptMarkers.of(Script.PUBLISH));
    CompletableFuture<Reply> publish = CompletableFuture.supplyAsync(() ->
        publishing.http().publish("race/b", new JsonObject().put("payload", 2)));
    Reply handedOut = waiting.join();
    assertEquals(1, handedOut.events().size(), handedOut.body());
    proxy.unstall();

    JsonObject result = publish.join().results().getJsonObject(0);
    assertEquals("CONFIRMED", result.getString("status"), result.encode());
    assertEquals(2, result.getInteger("matched"));
    JsonObject held = polling.http().metadata(full).json();
    assertEquals(2, held.getLong("backlog"), held.encode());
    assertEquals(List.of(1, 2), polling.http().poll(full, new JsonObject()).events().stream()
        .map(e -> ((JsonObject) e).getInteger("payload")).toList());
  }

  @Test
  @DisplayName("room held by a round whose spool call never came (its node died) goes when its time comes: the consumer takes events again")
  void abandonedHoldGoes() {
    String full = "full-c";
    putConsumer(full, "race/c", new JsonObject().put("quotaEvents", 1));
    Vertx vertx = Vertx.vertx();
    try {
      // a round's hold, as a node holds it before its spool calls, kept one second
      RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
      assertEquals(List.of(1), store.eval(Script.OWN_HOLD, Keys.consumer(full), List.of("abandoned", 1000, 10)).await()
          .stream().map(Response::toInteger).toList());
      JsonObject refused = publishing.http().publish("race/c", new JsonObject().put("payload", 1)).results().getJsonObject(0);
      assertEquals("QUOTA_EXCEEDED", refused.getString("code"), "the held room counts against the quota");
      await().atMost(Duration.ofSeconds(10)).until(() -> "CONFIRMED".equals(publishing.http()
          .publish("race/c", new JsonObject().put("payload", 2)).results().getJsonObject(0).getString("status")));
      JsonObject meta = new JsonObject();
      RedisCli.send(redis.url(), Request.cmd(Command.HMGET).arg("herald:{c:" + full + "}:meta").arg("heldBytes")
          .arg("heldEvents")).forEach(value -> meta.put("held" + meta.size(), value.toString()));
      assertEquals(new JsonObject().put("held0", "0").put("held1", "0"), meta, "nothing is held any more");
    } finally {
      vertx.close().await();
    }
  }
}
