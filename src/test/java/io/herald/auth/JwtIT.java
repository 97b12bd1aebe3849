package io.herald.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.config.HeraldConfig;
import io.herald.settings.InvalidSettingsException;
import io.herald.testing.Http;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.JWTOptions;
import io.vertx.ext.auth.PubSecKeyOptions;
import io.vertx.ext.auth.jwt.JWTAuth;
import io.vertx.ext.auth.jwt.JWTAuthOptions;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** JWT bearer tokens beside API keys: verified with the configured keys, grants from their claim. */
@Timeout(60)
class JwtIT {
  private static final String SECRET = "a-shared-secret-of-at-least-32-characters";
  private static final String API_KEY = "hk_test-key";
  private static final Vertx SIGNER = Vertx.vertx();
  private static TestRedis redis;
  private static TestNode node;
  private static JWTAuth hs256;
  private static JWTAuth rs256;
  private static JWTAuth stranger;

  @BeforeAll
  static void start() throws Exception {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
    generator.initialize(2048);
    KeyPair pair = generator.generateKeyPair();
    String publicPem = pem("PUBLIC KEY", pair.getPublic().getEncoded());
    hs256 = JWTAuth.create(SIGNER, new JWTAuthOptions().addPubSecKey(new PubSecKeyOptions().setAlgorithm("HS256").setBuffer(SECRET)));
    rs256 = JWTAuth.create(SIGNER, new JWTAuthOptions().addPubSecKey(new PubSecKeyOptions().setAlgorithm("RS256")
        .setBuffer(pem("PRIVATE KEY", pair.getPrivate().getEncoded()))));
    stranger = JWTAuth.create(SIGNER, new JWTAuthOptions().addPubSecKey(new PubSecKeyOptions().setAlgorithm("HS256")
        .setBuffer("another-secret-that-is-long-enough-too")));
    redis = TestRedis.start();
    node = TestNode.start(redis, new JsonObject().put("auth", new JsonObject()
        .put("keys", new JsonObject().put("ops", new JsonObject()
            .put("sha256", HexFormat.of().formatHex(ApiKey.hash(API_KEY))).put("admin", true)))
        .put("jwt", new JsonObject().put("issuer", "https://id.example.com").put("audience", "herald").put("leewaySeconds", 0)
            .put("keys", new JsonObject()
                .put("shared", new JsonObject().put("algorithm", "HS256").put("secret", SECRET))
                .put("idp", new JsonObject().put("algorithm", "RS256").put("publicKey", publicPem))))));
    Http.Reply created = node.http().withToken(API_KEY).putConsumer("billing",
        new JsonObject().put("topics", new JsonArray().add("orders/>")));
    assertEquals(201, created.status(), created.body());
  }

  @AfterAll
  static void stop() {
    node.close();
    redis.close();
    SIGNER.close().await();
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder().encodeToString(der) + "\n-----END " + type + "-----\n";
  }

  private static JsonObject grants(String publish, String consume, boolean admin) {
    return new JsonObject().put("publish", new JsonArray(List.of(publish))).put("consume", new JsonArray(List.of(consume)))
        .put("admin", admin);
  }

  private static String token(JWTAuth signer, String algorithm, JsonObject claims, String issuer, int expiresInSeconds) {
    long expires = System.currentTimeMillis() / 1000 + expiresInSeconds;
    return signer.generateToken(claims.copy().put("sub", "billing-worker").put("exp", expires),
        new JWTOptions().setAlgorithm(algorithm).setIssuer(issuer).setAudience(List.of("herald")));
  }

  private static String valid(JsonObject grants) {
    return token(hs256, "HS256", new JsonObject().put("herald", grants), "https://id.example.com", 60);
  }

  @Test
  @DisplayName("a signed token's grants claim decides: publish and consume within it, 403 outside it, admin only if granted")
  void grantsFromClaims() {
    Http http = node.http().withToken(valid(grants("orders/>", "billing", false)));
    assertEquals(200, http.publish("orders/eu", new JsonObject().put("payload", 1)).status());
    Http.Reply denied = http.publish("payments/eu", new JsonObject().put("payload", 1));
    assertEquals("PUBLISH_ACL_DENIED", denied.errorCode());
    assertEquals(200, http.poll("billing", new JsonObject()).status());
    assertEquals("ADMIN_ACL_DENIED", http.get("/v1/admin/consumers").errorCode());

    String rsa = token(rs256, "RS256", new JsonObject().put("herald", grants("x", "y", true)), "https://id.example.com", 60);
    assertEquals(200, node.http().withToken(rsa).get("/v1/admin/consumers").status());
    // API keys work beside tokens
    assertEquals(200, node.http().withToken(API_KEY).get("/v1/admin/consumers").status());
  }

  @Test
  @DisplayName("expired, foreign-signed, wrong-issuer, grant-less, never-expiring and malformed tokens get 401, and the answer never repeats the token")
  void badTokensAreRefused() {
    JsonObject claims = new JsonObject().put("herald", grants("orders/>", "billing", true));
    List<String> refused = List.of(
        token(hs256, "HS256", claims, "https://id.example.com", -120),
        token(stranger, "HS256", claims, "https://id.example.com", 60),
        token(hs256, "HS256", claims, "https://evil.example.com", 60),
        token(hs256, "HS256", new JsonObject().put("role", "admin"), "https://id.example.com", 60),
        token(hs256, "HS256", new JsonObject().put("herald", new JsonObject().put("admin", "yes")), "https://id.example.com", 60),
        hs256.generateToken(claims.copy().put("sub", "forever"), new JWTOptions().setAlgorithm("HS256")
            .setIssuer("https://id.example.com").setAudience(List.of("herald"))),
        "eyJhbGciOiJIUzI1NiJ9.not-json.c2ln");
    for (String token : refused) {
      Http.Reply reply = node.http().withToken(token).get("/v1/admin/consumers");
      assertEquals(401, reply.status(), "token " + refused.indexOf(token));
      assertEquals("UNAUTHENTICATED", reply.errorCode());
      assertFalse(reply.body().contains(token));
    }
  }

  @Test
  @DisplayName("browsers pass a token as ?access_token= on the upgrade")
  void socketUpgradeWithToken() {
    String token = valid(grants("orders/>", "billing", false));
    TestSocket.connect(node.port(), "/v1/consumers/billing/ws?access_token=" + token).close();
    assertEquals(401, assertThrows(io.vertx.core.http.UpgradeRejectedException.class,
        () -> TestSocket.connect(node.port(), "/v1/consumers/billing/ws?access_token=" + token + "x")).getStatus());
  }

  @Test
  @DisplayName("a socket opened with a token lives no longer than the token: consumer and publishing sockets close with 1008 once it expired")
  void socketsEndWithTheirToken() {
    String token = token(hs256, "HS256", new JsonObject().put("herald", grants("orders/>", "billing", false)),
        "https://id.example.com", 3);
    long expiresAt = (System.currentTimeMillis() / 1000 + 3) * 1000;
    try (TestSocket consumer = TestSocket.connect(node.port(), "/v1/consumers/billing/ws?access_token=" + token);
        TestSocket publisher = TestSocket.connect(node.port(), "/v1/ws/publish?access_token=" + token)) {
      publisher.send(new JsonObject().put("op", "publish").put("topic", "orders/eu").put("requestId", "p")
          .put("events", new JsonArray().add(new JsonObject().put("payload", "while valid"))));
      assertEquals("publishResult", publisher.next().getString("type"));
      consumer.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", consumer.next().getString("type"));

      assertEquals((short) 1008, consumer.awaitClose());
      assertEquals((short) 1008, publisher.awaitClose());
      assertTrue(System.currentTimeMillis() >= expiresAt - 1000, "closed no earlier than the token's end");
    }
  }

  @Test
  @DisplayName("JWT settings are checked at start: a key needs its material, secrets are long enough, algorithms known")
  void settingsAreChecked() {
    JsonObject jwt = new JsonObject().put("keys", new JsonObject()
        .put("a", new JsonObject().put("algorithm", "HS256").put("secret", "short"))
        .put("b", new JsonObject().put("algorithm", "RS256"))
        .put("c", new JsonObject().put("algorithm", "none").put("publicKey", "x")));
    InvalidSettingsException e = assertThrows(InvalidSettingsException.class,
        () -> HeraldConfig.from(new JsonObject().put("auth", new JsonObject().put("jwt", jwt))));
    assertEquals(List.of("auth.jwt.keys.a.secret", "auth.jwt.keys.b.publicKey", "auth.jwt.keys.c.algorithm"),
        e.errors().stream().map(error -> error.field()).toList());
    assertFalse(e.getMessage().contains("short"), "a secret is never repeated");
  }
}
