package io.herald.hardening;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
@NodeConfig("""
    {"http": {"idleTimeoutMs": 30000, "pingIntervalMs": 10000, "pongTimeoutMs": 5000}}""")
class LimitsIT extends GatewayTest {

  private static String nested(int depth) {
    return "[".repeat(depth) + "]".repeat(depth);
  }

  private static JsonObject error(String body) {
    return new JsonObject(body).getJsonObject("error");
  }

  @Test
  @DisplayName("JSON nested over 64 levels is refused with 400 on every route and socket; 60 levels are fine")
  void nestingDepth() {
    String topic = unique("deep");
    String consumer = consumer(new JsonObject(), topic);
    Reply tooDeep = http().post("/v1/topics/" + topic + "/events", "{\"payload\":" + nested(64) + "}");
    assertEquals(400, tooDeep.status(), tooDeep.body());
    assertEquals("INVALID_REQUEST", tooDeep.errorCode());
    assertEquals(0, http().metadata(consumer).json().getLong("backlog"));
    Reply fine = http().post("/v1/topics/" + topic + "/events", "{\"payload\":" + nested(60) + "}");
    assertEquals("CONFIRMED", fine.results().getJsonObject(0).getString("status"));

    assertEquals("INVALID_REQUEST", http().post("/v1/consumers/" + consumer + "/acks",
        "{\"ackIds\":" + nested(70) + "}").errorCode());
    assertEquals("INVALID_REQUEST", http().put("/v1/admin/consumers/" + consumer,
        "{\"topics\":[\"" + topic + "\"],\"redelivery\":" + "{\"a\":".repeat(70) + "1" + "}".repeat(70) + "}").errorCode());
    try (TestSocket socket = TestSocket.connect(nodeA.port(), "/v1/consumers/" + consumer + "/ws")) {
      socket.sendText("{\"op\":\"poll\",\"x\":" + nested(100) + "}");
      assertEquals("INVALID_REQUEST", socket.next().getString("code"));
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"));
    }
  }

  @Test
  @DisplayName("a request line or headers over their limits get 400 INVALID_REQUEST in the envelope, naming which")
  void requestLineAndHeaders() throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    String base = "http://127.0.0.1:" + nodeA.port();
    HttpResponse<String> longUri = client.send(HttpRequest.newBuilder(URI.create(base + "/v1/topics/" + "a".repeat(5000)
        + "/events")).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(400, longUri.statusCode());
    assertEquals("uri", error(longUri.body()).getJsonObject("details").getString("field"));
    HttpResponse<String> bigHeaders = client.send(HttpRequest.newBuilder(URI.create(base + "/health/live"))
        .header("X-Padding", "p".repeat(10_000)).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(400, bigHeaders.statusCode());
    assertEquals("headers", error(bigHeaders.body()).getJsonObject("details").getString("field"));
    assertEquals(200, client.send(HttpRequest.newBuilder(URI.create(base + "/health/live")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode());
  }

  @Test
  @DisplayName("a connection that sends nothing is closed after http.idleTimeoutMs")
  void idleConnectionsAreClosed() throws IOException, InterruptedException {
    try (Socket idle = new Socket("127.0.0.1", nodeA.port())) {
      idle.setSoTimeout(50_000);
      InputStream in = idle.getInputStream();
      // blocks until the server closes the connection (end of stream), or fails the test on timeout
      assertEquals(-1, in.read());
    }
    // on a new connection: the shared test client's pooled ones were idle as long, and are closed too
    HttpClient fresh = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    assertEquals(200, fresh.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + nodeA.port() + "/health/live"))
        .build(), HttpResponse.BodyHandlers.ofString()).statusCode());
  }
}
