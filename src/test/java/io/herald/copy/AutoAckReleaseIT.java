package io.herald.copy;

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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An auto-ack poll lets go of the events it hands out in its script, before its node has read them
 * from their copy: the copy must not be released until then, whatever another node does meanwhile.
 */
@Timeout(60)
class AutoAckReleaseIT {

  @Test
  @DisplayName("another node's scheduler step between an auto-ack poll and its read of the copy does not release the copy")
  void copyOutlivesTheRead() throws Exception {
    try (TestRedis redis = TestRedis.start();
        FreezingProxy proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
        TestNode publishing = TestNode.start(redis);
        TestNode polling = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())
            .put("timeoutMs", 20_000)))) {
      String consumer = "auto";
      assertEquals(201, publishing.http().putConsumer(consumer, new JsonObject().put("ackMode", "auto")
          .put("topics", new JsonArray().add("race/auto"))).status());
      await().until(() -> polling.http().get("/v1/admin/consumers/" + consumer).status() == 200);
      // published by the other node: the polling one has no copy of it cached
      String eventId = publishing.http().publish("race/auto", new JsonObject().put("payload", "once"))
          .results().getJsonObject(0).getString("eventId");

      proxy.stallAfter(ScriptMarkers.of(Script.POLL));
      CompletableFuture<Reply> poll = CompletableFuture.supplyAsync(() -> polling.http().poll(consumer,
          new JsonObject().put("maxEvents", 10)));
      // the poll's script ran: the event is handed out and, in auto mode, gone from the consumer
      String backlog = Keys.consumer(consumer).get(1);
      await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.LLEN).arg(backlog)).toInteger() == 0);

      // a scheduler step of the consumer, as another node runs it, releasing what it answers
      Vertx vertx = Vertx.vertx();
      try {
        RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
        Response step = store.eval(Script.REDELIVER, Keys.consumer(consumer), List.of(100)).await();
        List<String> released = new java.util.ArrayList<>();
        for (int i = 1; i < step.size(); i++) {
          released.add(step.get(i).toString());
        }
        new Copies(1 << 20).release(store, consumer, released).await();
        store.close().await();
      } finally {
        vertx.close().await();
      }

      proxy.unstall();
      Reply batch = poll.get();
      assertEquals(List.of(eventId), batch.eventIds(), batch.body());
      await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.EXISTS).arg(Keys.copy(Copies.copyOf(eventId))))
          .toInteger() == 0);
    }
  }
}
