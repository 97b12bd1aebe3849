package io.herald.ws;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.store.Keys;
import io.herald.store.Script;
import io.herald.store.ScriptMarkers;
import io.herald.testing.FreezingProxy;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A socket of a consumer with redeliverOnDisconnect closes while an ack it carried is on its way. */
@Timeout(60)
class DisconnectReleaseIT {

  @Test
  @DisplayName("redeliverOnDisconnect: a closing socket releases its deliveries only once the acks read from it were answered, so an acked one never goes out again")
  void releaseWaitsForTheAcksInFlight() throws Exception {
    try (TestRedis redis = TestRedis.start();
        FreezingProxy proxy = new FreezingProxy(Integer.parseInt(redis.url().replaceAll(".*:", "")));
        TestNode closing = TestNode.start(redis, new JsonObject().put("redis", new JsonObject().put("url", proxy.url())
            .put("timeoutMs", 20_000)));
        TestNode other = TestNode.start(redis)) {
      String consumer = "released";
      assertEquals(201, other.http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add("gone"))
          .put("redeliverOnDisconnect", true).put("redelivery", new JsonObject().put("initialDelayMs", 0))).status());
      await().until(() -> closing.http().metadata(consumer).status() == 200);
      assertEquals(200, other.http().publish("gone", new JsonObject().put("payload", "once")).status());

      TestSocket socket = closing.consumerSocket(consumer);
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
      String ackId = socket.next().getJsonArray("events").getJsonObject(0).getString("ackId");
      // another client of the consumer waits for anything that comes back
      CompletableFuture<Reply> waiting = CompletableFuture.supplyAsync(() -> other.http().poll(consumer,
          new JsonObject().put("maxEvents", 10).put("waitMs", 2000)));
      await().until(() -> RedisCli.send(redis.url(), Request.cmd(Command.ZCARD).arg(Keys.waiters(consumer))).toInteger() == 1);

      // the ack leaves the node and is held on its way to Redis; the socket closes meanwhile
      proxy.holdBefore(ScriptMarkers.of(Script.ACK));
      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(ackId)));
      await().until(proxy::holding);
      socket.close();

      Reply meanwhile = waiting.join();
      proxy.releaseHeld();
      assertEquals(List.of(), meanwhile.events().getList(), "the acked delivery was not handed out again");
      await().until(() -> other.http().metadata(consumer).json().getJsonObject("totals").getLong("acked") == 1);
      JsonObject metadata = other.http().metadata(consumer).json();
      assertEquals(0, metadata.getLong("unacked"), metadata.encode());
      assertEquals(1, metadata.getJsonObject("totals").getLong("delivered"), metadata.encode());
    }
  }
}
