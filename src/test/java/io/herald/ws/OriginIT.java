package io.herald.ws;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonObject;
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
}
