package io.herald.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.Http;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class DeclaredConsumersIT {

  @Test
  @DisplayName("consumers declared in the configuration exist at start-up with their settings")
  void declaredConsumersExistAtStartUp() {
    JsonObject config = new JsonObject().put("consumers", new JsonObject()
        .put("billing", new JsonObject().put("topics", new JsonArray().add("orders/>")).put("maxPollRecords", 3)));
    try (TestRedis redis = TestRedis.start(); TestNode node = TestNode.start(redis, config)) {
      Http http = node.http();
      JsonObject billing = http.get("/v1/admin/consumers/billing").json();
      assertEquals(3, billing.getInteger("maxPollRecords"));
      assertEquals(30000, billing.getInteger("ackTimeoutMs"));
      for (int i = 0; i < 5; i++) {
        http.publish("orders/eu", new JsonObject().put("payload", i));
      }
      assertEquals(3, http.poll("billing", new JsonObject()).events().size());
    }
  }
}
