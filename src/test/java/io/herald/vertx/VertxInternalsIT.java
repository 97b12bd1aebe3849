package io.herald.vertx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What Herald takes from Vert.x' implementation, checked against the Vert.x on the class path. */
@Timeout(30)
class VertxInternalsIT {
  private static final Vertx VERTX = Vertx.vertx();
  private static TestRedis redis;

  @BeforeAll
  static void start() {
    redis = TestRedis.start();
  }

  @AfterAll
  static void stop() {
    redis.close();
    VERTX.close().await();
  }

  private static Throwable failureOf(String url, Request request) {
    Redis client = Redis.createClient(VERTX, url);
    try {
      return client.send(request).transform(done -> Future.succeededFuture(done.cause())).await();
    } finally {
      client.close();
    }
  }

  @Test
  @DisplayName("an error reply of Redis is told from a connection that could not be made, and neither from the other")
  void redisFailures() {
    Throwable reply = failureOf(redis.url(), Request.cmd(Command.INCRBY).arg("k").arg("not a number"));
    assertTrue(VertxInternals.isRedisErrorReply(reply), String.valueOf(reply));
    assertFalse(VertxInternals.isNotConnected(reply));

    Throwable refused = failureOf("redis://127.0.0.1:" + freePort(), Request.cmd(Command.PING));
    assertTrue(VertxInternals.isNotConnected(refused), String.valueOf(refused));
    assertFalse(VertxInternals.isRedisErrorReply(refused));
  }

  @Test
  @DisplayName("a command's keys are located as Redis locates them: a script call's declared keys, none for PUBLISH")
  void keysOfCommands() {
    assertEquals(List.of("k1", "k2"), VertxInternals.keysOf(Request.cmd(Command.FCALL).arg("f").arg(2).arg("k1").arg("k2")
        .arg("a1")).stream().map(String::new).toList());
    assertEquals(List.of("h"), VertxInternals.keysOf(Request.cmd(Command.HSET).arg("h").arg("f").arg("v")).stream()
        .map(String::new).toList());
    assertEquals(List.of(), VertxInternals.keysOf(Request.cmd(Command.PUBLISH).arg("channel").arg("m")));
  }

  @Test
  @DisplayName("a command waiting on a connection that closes is neither an error reply of Redis nor a command that was never sent")
  void connectionClosedUnderACommand() {
    Redis client = Redis.createClient(VERTX, redis.url());
    try {
      RedisConnection connection = client.connect().await();
      long id = connection.send(Request.cmd(Command.CLIENT).arg("ID")).await().toLong();
      Future<?> waiting = connection.send(Request.cmd(Command.BLPOP).arg("never-" + id).arg(0));
      failureOf(redis.url(), Request.cmd(Command.CLIENT).arg("KILL").arg("ID").arg(id));
      Throwable closed = waiting.transform(done -> Future.succeededFuture(done.cause())).await();
      // the client fails it with an error of the class of Redis' error replies
      assertEquals("io.vertx.redis.client.impl.types.ErrorType", closed.getClass().getName());
      assertEquals("CONNECTION_CLOSED", closed.getMessage());
      assertFalse(VertxInternals.isRedisErrorReply(closed), String.valueOf(closed));
      assertFalse(VertxInternals.isNotConnected(closed), String.valueOf(closed));
    } finally {
      client.close();
    }
  }

  @Test
  @DisplayName("a WebSocket connection is dropped without a close frame: the client sees 1006")
  void dropWithoutCloseFrame() {
    Promise<Boolean> dropped = Promise.promise();
    HttpServer server = VERTX.createHttpServer().requestHandler(request -> {
      HttpConnection connection = request.connection();
      request.toWebSocket().onSuccess(socket ->
          socket.textMessageHandler(text -> dropped.complete(VertxInternals.dropWithoutCloseFrame(connection))));
    }).listen(0, "127.0.0.1").await();
    try (TestSocket client = TestSocket.connect(server.actualPort(), "/")) {
      client.send(new JsonObject().put("op", "ping"));
      assertTrue(dropped.future().await());
      // no close frame came: the client reports the abnormal closure RFC 6455 calls 1006
      assertEquals((short) 1006, client.awaitClose());
    } finally {
      server.close().await();
    }
  }

  @Test
  @DisplayName("a connection's flushes are consolidated, and frames written in one task still all arrive")
  void consolidateFlushes() {
    Promise<Boolean> consolidated = Promise.promise();
    HttpServer server = VERTX.createHttpServer().connectionHandler(connection ->
        consolidated.complete(VertxInternals.consolidateFlushes(connection))).requestHandler(request ->
        request.toWebSocket().onSuccess(socket -> socket.textMessageHandler(text -> {
          for (int i = 0; i < 3; i++) {
            socket.writeTextMessage(new JsonObject().put("n", i).encode());
          }
        }))).listen(0, "127.0.0.1").await();
    try (TestSocket client = TestSocket.connect(server.actualPort(), "/")) {
      assertTrue(consolidated.future().await());
      client.send(new JsonObject().put("op", "ping"));
      for (int i = 0; i < 3; i++) {
        assertEquals(i, client.next().getInteger("n"));
      }
    } finally {
      server.close().await();
    }
  }

  @Test
  @DisplayName("a text message written from its bytes arrives whole, in one frame or in several of at most the frame size")
  void writeText() {
    Promise<Boolean> written = Promise.promise();
    String longText = "é".repeat(1500);
    HttpServer server = VERTX.createHttpServer().requestHandler(request ->
        request.toWebSocket().onSuccess(socket -> socket.textMessageHandler(text -> written.complete(
            VertxInternals.writeText(socket, new JsonObject().put("n", 1).toBuffer(), 1024)
                && VertxInternals.writeText(socket, new JsonObject().put("text", longText).toBuffer(), 1024))))
    ).listen(0, "127.0.0.1").await();
    try (TestSocket client = TestSocket.connect(server.actualPort(), "/")) {
      client.send(new JsonObject().put("op", "ping"));
      assertTrue(written.future().await());
      assertEquals(1, client.next().getInteger("n"));
      // 3,011 bytes of UTF-8: three frames of at most 1,024, one cut through a two-byte character
      assertEquals(longText, client.next().getString("text"));
    } finally {
      server.close().await();
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
