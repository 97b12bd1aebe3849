package io.herald;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.auth.ApiKey;
import io.herald.store.RedisProcess;
import io.herald.testing.JarProcess;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar as an operator runs it: what it writes while it runs (one line per record, text
 * or JSON, never a secret) and what it says when it cannot start (what failed, where it is set).
 */
@Timeout(120)
class StartupIT {
  private static final String API_KEY = "startup-api-key-0123456789abcdef";
  private static final String JWT_SECRET = "startup-jwt-secret-that-is-long-enough";
  /** A text record: time, level, thread, logger, message, all on one line. */
  private static final Pattern TEXT_RECORD = Pattern.compile(
      "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\S* (TRACE|DEBUG|INFO |WARN |ERROR) \\[[^]]+] \\S+ - .*");

  private static final HttpClient HTTP = HttpClient.newHttpClient();

  @TempDir
  Path dir;

  private Path config(JsonObject config) throws IOException {
    Path file = dir.resolve("herald.json");
    Files.writeString(file, config.encodePrettily());
    return file;
  }

  private Map<String, String> dataDir() {
    return Map.of("HERALD_DATA_DIR", dir.resolve("data").toString());
  }

  private static JsonObject withCredentials(int port) {
    return new JsonObject().put("http", new JsonObject().put("host", "127.0.0.1").put("port", port))
        .put("auth", new JsonObject()
            .put("keys", new JsonObject().put("ops", new JsonObject()
                .put("sha256", HexFormat.of().formatHex(ApiKey.hash(API_KEY))).put("admin", true)
                .put("publish", new JsonArray().add(">")).put("consume", new JsonArray().add("*"))))
            .put("jwt", new JsonObject().put("keys", new JsonObject()
                .put("shared", new JsonObject().put("algorithm", "HS256").put("secret", JWT_SECRET)))));
  }

  private static int send(int port, String method, String path, String token, String body) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
        .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  @Test
  @DisplayName("the jar logs through one backend, one line per record, with no SLF4J warning and no key, token or secret, whatever it is sent")
  void logsOneLinePerRecordAndNoSecret() throws Exception {
    int port = RedisProcess.freePort();
    String output;
    try (JarProcess jar = JarProcess.start(config(withCredentials(port)), dataDir())) {
      jar.awaitOutput("Herald listens on");
      assertEquals(201, send(port, "PUT", "/v1/admin/consumers/startup", API_KEY,
          new JsonObject().put("topics", new JsonArray().add("orders")).encode()));
      assertEquals(200, send(port, "POST", "/v1/topics/orders/events", API_KEY,
          new JsonObject().put("payload", 1).encode()));
      // refused credentials: a key's secret as a token, a token with the JWT secret in it, a forged JWT
      assertEquals(401, send(port, "GET", "/v1/admin/stats", JWT_SECRET, null));
      assertEquals(401, send(port, "GET", "/v1/admin/stats", "eyJhbGciOiJIUzI1NiJ9." + JWT_SECRET + ".x", null));
      assertEquals(401, send(port, "GET", "/v1/admin/stats", API_KEY + "x", null));
      output = jar.stop();
    }
    assertTrue(output.contains("Herald listens on http://127.0.0.1:" + port), output);
    assertFalse(output.contains("SLF4J"), output);
    assertFalse(output.contains(API_KEY), output);
    assertFalse(output.contains(JWT_SECRET), output);
    for (String line : output.split("\n")) {
      assertTrue(TEXT_RECORD.matcher(line).matches(), "not one record on one line: " + line);
    }
  }

  @Test
  @DisplayName("HERALD_LOG_FORMAT=json: every line is one JSON record with its time, level, logger and message")
  void logsJsonWhenAsked() throws Exception {
    Map<String, String> environment = new HashMap<>(dataDir());
    environment.put("HERALD_LOG_FORMAT", "json");
    environment.put("HERALD_HTTP_PORT", String.valueOf(RedisProcess.freePort()));
    String output;
    try (JarProcess jar = JarProcess.start(null, environment)) {
      jar.awaitOutput("Herald listens on");
      output = jar.stop();
    }
    List<String> messages = new ArrayList<>();
    for (String line : output.split("\n")) {
      JsonObject record = new JsonObject(line);
      assertTrue(record.containsKey("timestamp") && record.containsKey("loggerName"), line);
      assertTrue(List.of("INFO", "WARN", "ERROR", "DEBUG").contains(record.getString("level")), line);
      messages.add(record.getString("formattedMessage"));
    }
    assertTrue(messages.stream().anyMatch(m -> m.startsWith("Herald listens on")), messages.toString());
  }

  @Test
  @DisplayName("a port already in use: the node names the address and the setting, and exits with 1")
  void portInUseIsNamed() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Map<String, String> environment = new HashMap<>(dataDir());
      environment.put("HERALD_HTTP_PORT", String.valueOf(taken.getLocalPort()));
      try (JarProcess jar = JarProcess.start(null, environment)) {
        assertEquals(1, jar.exitCode());
        String output = jar.output();
        assertTrue(output.contains("Herald cannot start: cannot listen on 127.0.0.1:" + taken.getLocalPort()
            + " (http.host, http.port / HERALD_HTTP_PORT)"), output);
      }
    }
  }

  @Test
  @DisplayName("a Redis that does not answer: the node names its address without the password, and the setting")
  void unreachableRedisIsNamedWithoutItsPassword() throws Exception {
    int closed = RedisProcess.freePort();
    try (JarProcess jar = JarProcess.start(null,
        Map.of("HERALD_REDIS_URL", "redis://herald:pa55-w0rd-kept-out@127.0.0.1:" + closed))) {
      assertEquals(1, jar.exitCode());
      String output = jar.output();
      assertTrue(output.contains("Herald cannot start: cannot use Redis at standalone redis://***@127.0.0.1:" + closed
          + " (redis.url / HERALD_REDIS_URL)"), output);
      assertFalse(output.contains("pa55-w0rd-kept-out"), output);
    }
  }

  @Test
  @DisplayName("a bad configuration: the node names the file and the setting, never a secret's value, on one line")
  void badConfigurationIsNamed() throws Exception {
    Path file = config(new JsonObject().put("http", new JsonObject().put("port", 99_999)));
    try (JarProcess jar = JarProcess.start(file, dataDir())) {
      assertEquals(1, jar.exitCode());
      assertEquals("Herald cannot start: configuration " + file + ": http.port: must be an integer in 0..65535\n",
          jar.output());
    }
    String shortSecret = "too-short-a-secret";
    file = config(new JsonObject().put("auth", new JsonObject().put("jwt", new JsonObject().put("keys",
        new JsonObject().put("shared", new JsonObject().put("algorithm", "HS256").put("secret", shortSecret))))));
    try (JarProcess jar = JarProcess.start(file, dataDir())) {
      assertEquals(1, jar.exitCode());
      String output = jar.output();
      assertTrue(output.startsWith("Herald cannot start: configuration " + file + ": auth.jwt.keys.shared"), output);
      assertFalse(output.contains(shortSecret), output);
      assertEquals(1, output.split("\n").length, output);
    }
  }

  @Test
  @DisplayName("a logging setting logback cannot use stops the start with a message, rather than a node that logs nothing")
  void badLoggingSettingIsNamed() throws Exception {
    try (JarProcess jar = JarProcess.start(null, Map.of("HERALD_LOG_FORMAT", "JSON"))) {
      assertEquals(1, jar.exitCode());
      assertEquals("Herald cannot start: HERALD_LOG_FORMAT (herald.log.format) must be text or json, not 'JSON'\n",
          jar.output());
    }
    try (JarProcess jar = JarProcess.start(null, Map.of("HERALD_LOG_LEVEL", "WARNING"))) {
      assertEquals(1, jar.exitCode());
      assertTrue(jar.output().startsWith("Herald cannot start: HERALD_LOG_LEVEL must be one of TRACE, DEBUG"),
          jar.output());
    }
  }
}
