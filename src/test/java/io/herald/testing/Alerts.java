package io.herald.testing;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Reading the gateway's alerts as a consumer of {@code $sys/alerts/...} does. */
public final class Alerts {
  private Alerts() {}

  /** The payload of the next alert {@code consumer} receives on {@code topic} (long polls until one comes), acked. */
  public static JsonObject next(Http http, String consumer, String topic) {
    List<JsonObject> alert = new ArrayList<>();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      Http.Reply batch = http.poll(consumer, new JsonObject().put("maxEvents", 1).put("waitMs", 1000));
      batch.events().forEach(e -> {
        assertEquals(topic, ((JsonObject) e).getString("topic"));
        alert.add(((JsonObject) e).getJsonObject("payload"));
      });
      if (!batch.ackIds().isEmpty()) {
        http.ack(consumer, batch.ackIds().toArray(String[]::new));
      }
      return !alert.isEmpty();
    });
    return alert.get(0);
  }
}
