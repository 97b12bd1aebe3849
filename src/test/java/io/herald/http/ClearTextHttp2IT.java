package io.herald.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** HTTP/2 over clear text (h2c): off unless {@code http.h2c} is set. */
@Timeout(60)
class ClearTextHttp2IT {
  /** What the JDK's client gets on a new connection: it asks for an h2c upgrade by default. */
  private static HttpResponse<String> fetch(TestNode node, String path) throws Exception {
    HttpClient client = HttpClient.newHttpClient();
    return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + node.port() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  @DisplayName("by default a client asking for an h2c upgrade is answered over HTTP/1.1, the whole answer with it")
  void upgradeDeclinedByDefault() throws Exception {
    try (TestRedis redis = TestRedis.start(); TestNode node = TestNode.start(redis)) {
      String document = node.http().get("/v1/openapi.json").body();
      HttpResponse<String> answer = fetch(node, "/v1/openapi.json");
      assertEquals(HttpClient.Version.HTTP_1_1, answer.version());
      assertEquals(document, answer.body());
    }
  }

  @Test
  @DisplayName("with http.h2c the upgrade is taken")
  void upgradeTakenWhenEnabled() throws Exception {
    try (TestRedis redis = TestRedis.start();
        TestNode node = TestNode.start(redis, new JsonObject().put("http", new JsonObject().put("h2c", true)))) {
      HttpResponse<String> answer = fetch(node, "/health/live");
      assertEquals(HttpClient.Version.HTTP_2, answer.version());
      assertEquals(200, answer.statusCode());
    }
  }
}
