package io.herald.ws;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Optional;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
@NodeConfig("""
    {"http": {"allowedOrigins": ["https://app.example.com"]}}""")
class OriginIT extends GatewayTest {

  /** The upgrade succeeds (a refused one throws with its status). */
  private static void opens(String origin, String path) {
    TestSocket.connectFrom(origin, nodeA.port(), path).close();
  }

  @Test
  @DisplayName("upgrades from an allowed origin, from the gateway's own, or without Origin open; others get 403 ORIGIN_NOT_ALLOWED in the handshake")
  void originsAreChecked() {
    String consumer = consumer(new JsonObject(), unique("t"));
    for (String path : new String[] {"/v1/consumers/" + consumer + "/ws", "/v1/ws/publish"}) {
      opens("https://app.example.com", path);
      opens("HTTPS://APP.EXAMPLE.COM/", path);
      opens("http://127.0.0.1:" + nodeA.port(), path);
      TestSocket.connect(nodeA.port(), path).close();
      for (String foreign : new String[] {"https://evil.example.com", "http://127.0.0.1:1", "null"}) {
        UpgradeRejectedException refused = assertThrows(UpgradeRejectedException.class,
            () -> TestSocket.connectFrom(foreign, nodeA.port(), path), foreign);
        assertEquals(403, refused.getStatus());
        assertEquals("ORIGIN_NOT_ALLOWED", new JsonObject(refused.getBody()).getJsonObject("error").getString("code"));
      }
    }
  }

  private static HttpResponse<String> send(String method, String path, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + nodeA.port() + path))
        .method(method, HttpRequest.BodyPublishers.noBody());
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build().send(request.build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  @DisplayName("pages of an allowed origin may call the HTTP API (CORS): preflights answered, Retry-After readable; other origins get no CORS headers")
  void crossOriginRequests() throws Exception {
    String consumer = consumer(new JsonObject(), unique("t"));
    HttpResponse<String> preflight = send("OPTIONS", "/v1/consumers/" + consumer + "/poll", "Origin", "https://app.example.com",
        "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type");
    assertEquals(204, preflight.statusCode());
    assertEquals("https://app.example.com", preflight.headers().firstValue("Access-Control-Allow-Origin").orElse(null));
    assertEquals("GET, POST, PUT, DELETE", preflight.headers().firstValue("Access-Control-Allow-Methods").orElse(null));
    assertEquals("Authorization, Content-Type", preflight.headers().firstValue("Access-Control-Allow-Headers").orElse(null));

    HttpResponse<String> metadata = send("GET", "/v1/consumers/" + consumer + "/metadata", "Origin", "https://app.example.com");
    assertEquals(200, metadata.statusCode());
    assertEquals("https://app.example.com", metadata.headers().firstValue("Access-Control-Allow-Origin").orElse(null));
    assertEquals("Retry-After", metadata.headers().firstValue("Access-Control-Expose-Headers").orElse(null));
    assertEquals("Origin", metadata.headers().firstValue("Vary").orElse(null));

    for (String other : new String[] {"https://evil.example.com", "http://127.0.0.1:" + nodeA.port()}) {
      HttpResponse<String> answer = send("GET", "/v1/consumers/" + consumer + "/metadata", "Origin", other);
      assertEquals(200, answer.statusCode(), other);
      assertEquals(Optional.empty(), answer.headers().firstValue("Access-Control-Allow-Origin"), other);
      assertEquals(405, send("OPTIONS", "/v1/consumers/" + consumer + "/poll", "Origin", other,
          "Access-Control-Request-Method", "POST").statusCode(), other);
    }
  }
}
