package io.herald.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.config.HeraldConfig;
import io.herald.settings.InvalidSettingsException;
import io.herald.testing.Http;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HexFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** API keys from the configuration, stored as SHA-256 hashes only. */
@Timeout(60)
class ApiKeysIT {
  private static final String SECRET = ApiKey.newSecret();
  private static final String LIMITED = ApiKey.newSecret();
  private static final String OPERATOR = ApiKey.newSecret();
  private static TestRedis redis;
  private static TestNode node;

  private static JsonObject keys(String sha256) {
    return new JsonObject().put("auth", new JsonObject().put("keys", new JsonObject()
        .put("ops", new JsonObject().put("sha256", sha256).put("admin", true)
            .put("publish", new JsonArray().add(">")).put("consume", new JsonArray().add("billing").add("audit")))
        .put("billing-app", new JsonObject().put("sha256", HexFormat.of().formatHex(ApiKey.hash(LIMITED)))
            .put("publish", new JsonArray().add("orders/>")).put("consume", new JsonArray().add("billing")))
        .put("operator", new JsonObject().put("sha256", HexFormat.of().formatHex(ApiKey.hash(OPERATOR))).put("admin", true)
            .put("consume", new JsonArray().add("*")))));
  }

  @BeforeAll
  static void start() {
    redis = TestRedis.start();
    node = TestNode.start(redis, keys(HexFormat.of().formatHex(ApiKey.hash(SECRET))));
  }

  @AfterAll
  static void stop() {
    node.close();
    redis.close();
  }

  @Test
  @DisplayName("with keys configured, requests need one: none or a wrong one is 401, without echoing it; health stays open")
  void keysRequired() {
    Http.Reply none = node.http().get("/v1/admin/consumers");
    assertEquals(401, none.status());
    assertEquals("UNAUTHENTICATED", none.errorCode());
    Http.Reply wrong = node.http().withToken("hk_guess").get("/v1/admin/consumers");
    assertEquals(401, wrong.status());
    assertFalse(wrong.body().contains("hk_guess"), "a refusal never repeats what was presented");
    assertEquals(200, node.http().withToken(SECRET).get("/v1/admin/consumers").status());
    assertEquals(200, node.http().get("/health/live").status());
  }

  @Test
  @DisplayName("a WebSocket upgrade takes the key as ?access_token= and is refused in the handshake without it")
  void upgradesTakeAccessToken() {
    Http.Reply created = node.http().withToken(SECRET).putConsumer("billing",
        new JsonObject().put("topics", new JsonArray().add("orders/>")));
    assertTrue(created.status() == 201 || created.status() == 200, created.body());
    UpgradeRejectedException refused = assertThrows(UpgradeRejectedException.class,
        () -> TestSocket.connect(node.port(), "/v1/consumers/billing/ws"));
    assertEquals(401, refused.getStatus());
    try (TestSocket socket = TestSocket.connect(node.port(), "/v1/consumers/billing/ws?access_token=" + SECRET)) {
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"));
    }
  }

  @Test
  @DisplayName("consume grants take patterns: an operator's key with admin and consume [\"*\"] may use every consumer")
  void consumePatterns() {
    Http operator = node.http().withToken(OPERATOR);
    String name = "anything-" + System.nanoTime();
    assertEquals(201, operator.putConsumer(name, new JsonObject().put("topics", new JsonArray().add("orders/>"))).status());
    assertEquals(200, operator.poll(name, new JsonObject()).status());
    assertEquals(200, operator.metadata(name).status());
    assertEquals("CONSUME_ACL_DENIED", node.http().withToken(LIMITED).poll(name, new JsonObject()).errorCode());
  }

  @Test
  @DisplayName("a key's grants hold: publishing outside them is 403 PUBLISH_ACL_DENIED naming the topic, other consumers CONSUME_ACL_DENIED, admin routes ADMIN_ACL_DENIED")
  void grantsEnforced() {
    Http admin = node.http().withToken(SECRET);
    admin.putConsumer("billing", new JsonObject().put("topics", new JsonArray().add("orders/>")));
    admin.putConsumer("audit", new JsonObject().put("topics", new JsonArray().add("orders/>")));
    Http limited = node.http().withToken(LIMITED);

    assertEquals(200, limited.publish("orders/eu", new JsonObject().put("payload", 1)).status());
    Http.Reply denied = limited.publish("payments/eu", new JsonObject().put("payload", 1));
    assertEquals(403, denied.status());
    assertEquals("PUBLISH_ACL_DENIED", denied.errorCode());
    assertEquals("payments/eu", denied.json().getJsonObject("error").getJsonObject("details").getString("topic"));

    assertEquals(200, limited.poll("billing", new JsonObject()).status());
    assertEquals("CONSUME_ACL_DENIED", limited.poll("audit", new JsonObject()).errorCode());
    assertEquals("CONSUME_ACL_DENIED", limited.metadata("audit").errorCode());
    UpgradeRejectedException socket = assertThrows(UpgradeRejectedException.class,
        () -> TestSocket.connect(node.port(), "/v1/consumers/audit/ws?access_token=" + LIMITED));
    assertEquals(403, socket.getStatus());
    assertEquals("ADMIN_ACL_DENIED", limited.get("/v1/admin/consumers").errorCode());

    try (TestSocket publisher = TestSocket.connect(node.port(), "/v1/ws/publish?access_token=" + LIMITED)) {
      publisher.send(new JsonObject().put("op", "publish").put("topic", "payments/eu").put("requestId", "p")
          .put("events", new JsonArray().add(new JsonObject().put("payload", 1))));
      JsonObject error = publisher.next();
      assertEquals("PUBLISH_ACL_DENIED", error.getString("code"), error.encode());
    }
  }

  @Test
  @DisplayName("a key's sha256 must be 64 hex digits; the configuration names the key")
  void badHashRefused() {
    InvalidSettingsException invalid = assertThrows(InvalidSettingsException.class,
        () -> HeraldConfig.from(keys("not-a-hash")));
    assertTrue(invalid.getMessage().contains("auth.keys.ops.sha256"), invalid.getMessage());
  }
}
