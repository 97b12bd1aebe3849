package io.herald.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.testing.Http;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.Future;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The credentials hook every route but health and every upgrade goes through (keys come with the auth issue). */
@Timeout(60)
class AuthenticationIT {
  private static final String TOKEN = "let-me-in";
  private static TestRedis redis;
  private static TestNode node;

  @BeforeAll
  static void start() {
    redis = TestRedis.start();
    node = TestNode.start(redis, new JsonObject(), token -> TOKEN.equals(token)
        ? Future.succeededFuture(Caller.ANYONE)
        : Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED, "Unknown credentials")));
    Http.Reply created = node.http().withToken(TOKEN).putConsumer("guarded",
        new JsonObject().put("topics", new JsonArray().add("guarded")));
    assertEquals(201, created.status(), created.body());
  }

  @AfterAll
  static void stop() {
    node.close();
    redis.close();
  }

  @Test
  @DisplayName("a request without the credentials the authenticator wants gets 401 UNAUTHENTICATED; with them it goes on")
  void httpRoutesAreGuarded() {
    Http.Reply anonymous = node.http().publish("guarded", new JsonObject().put("payload", 1));
    assertEquals(401, anonymous.status());
    assertEquals("UNAUTHENTICATED", anonymous.errorCode());
    assertEquals(401, node.http().withToken("wrong").poll("guarded", new JsonObject()).status());
    assertEquals(200, node.http().withToken(TOKEN).publish("guarded", new JsonObject().put("payload", 1)).status());
    assertEquals(0, node.http().withToken(TOKEN).metadata("guarded").json().getLong("unacked"));
  }

  @Test
  @DisplayName("credentials that are not a bearer token are refused")
  void onlyBearerTokens() {
    Http.Reply basic = node.http().withAuthorization("Basic " + TOKEN).metadata("guarded");
    assertEquals(401, basic.status());
    assertEquals("UNAUTHENTICATED", basic.errorCode());
  }

  @Test
  @DisplayName("health checks need no credentials")
  void healthIsOpen() {
    assertEquals(200, node.http().get("/health/live").status());
    assertEquals(200, node.http().get("/health/ready").status());
  }

  @Test
  @DisplayName("WebSocket upgrades are refused in the handshake without credentials, and accept ?access_token=")
  void upgradesAreGuarded() {
    UpgradeRejectedException consumer = assertThrows(UpgradeRejectedException.class,
        () -> TestSocket.connect(node.port(), "/v1/consumers/guarded/ws"));
    assertEquals(401, consumer.getStatus());
    UpgradeRejectedException publisher = assertThrows(UpgradeRejectedException.class,
        () -> TestSocket.connect(node.port(), "/v1/ws/publish?access_token=wrong"));
    assertEquals(401, publisher.getStatus());
    try (TestSocket socket = TestSocket.connect(node.port(), "/v1/consumers/guarded/ws?access_token=" + TOKEN)) {
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"));
    }
  }
}
