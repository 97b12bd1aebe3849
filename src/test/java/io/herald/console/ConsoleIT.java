package io.herald.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(90)
@NodeConfig("""
    {"auth": {"keys": {
      "ops": {"sha256": "9758f3efecca24337f60408a03943767dbe7ed00940442614ec8e1d61a9e6f09", "admin": true,
        "publish": [">"], "consume": ["*"]},
      "reader": {"sha256": "500bf3463f26ad87b5a088ef579348d4425a1b053d52bfe27ae33ce6e38f08ad", "consume": ["*"]}}}}""")
class ConsoleIT extends GatewayTest {
  static final String ADMIN = "hk_console_admin_0123456789";
  private static final String READER = "hk_console_reader_0123456789";
  private static final Duration LIVE = Duration.ofSeconds(15);

  private static Http admin() {
    return http().withToken(ADMIN);
  }

  private static String consumerOf(String topic, JsonObject settings) {
    String consumer = unique("console");
    assertEquals(201, admin().putConsumer(consumer, settings.copy().put("topics", new JsonArray().add(topic))).status());
    return consumer;
  }

  @Test
  @DisplayName("the page is served from the jar without credentials, with a strict content policy; its data needs an admin grant")
  void pageIsPublicDataIsNot() {
    Http.Reply page = http().get("/console/");
    assertEquals(200, page.status());
    assertTrue(page.body().contains("<script type=\"module\" src=\"console.js\">"), page.body());
    assertTrue(page.raw().headers().firstValue("content-security-policy").orElse("").contains("default-src 'none'"));
    assertEquals(200, http().get("/console/console.js").status());
    assertEquals(200, http().get("/console/console.css").status());
    assertEquals(302, http().get("/console").status());
    // nothing outside the page's folder in the jar
    assertTrue(http().get("/console/../logback.xml").status() >= 400);

    assertEquals("UNAUTHENTICATED", http().get("/v1/admin/live").errorCode());
    assertEquals("ADMIN_ACL_DENIED", http().withToken(READER).get("/v1/admin/live").errorCode());
  }

  @Test
  @DisplayName("the live stream sends a consumer's figures after each pass, without /metrics being read: backlog, dead letters, rates, alerts")
  void liveFigures() throws Exception {
    String topic = unique("console/live");
    String consumer = consumerOf(topic, new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)));
    try (LiveStream live = LiveStream.open(nodeA.port(), ADMIN)) {
      JsonObject first = live.next(figures -> LiveStream.row(figures, consumer) != null, LIVE);
      assertEquals(0, LiveStream.row(first, consumer).getInteger("backlog"));
      assertEquals("CLEAR", first.getJsonObject("stats").getJsonObject("spool").getString("alert"));
      assertTrue(first.getLong("everyMs") >= 1000, "at most one pass a second: " + first);

      assertEquals(200, admin().publish(topic, events(1, 2, 3)).status());
      JsonObject published = live.next(figures -> backlogOf(figures, consumer) == 3, LIVE);
      assertTrue(published.getLong("at") > 0);

      String ackId = admin().poll(consumer, max(1)).ackIds().get(0);
      assertEquals(200, admin().post("/v1/consumers/" + consumer + "/nacks",
          new JsonObject().put("ackIds", new JsonArray().add(ackId)).put("action", "REQUEUE")).status());
      JsonObject row = LiveStream.row(live.next(figures -> {
        JsonObject r = LiveStream.row(figures, consumer);
        return r != null && r.getInteger("deadLetters") == 1 && r.getJsonObject("rates") != null;
      }, LIVE), consumer);
      assertEquals(2, row.getInteger("backlog"));
      assertEquals(0, row.getInteger("unacked"));
      assertEquals(0, row.getInteger("stale"));
      assertEquals(0, row.getInteger("errors"));
      assertNull(row.getValue("blockedUntil"));
      assertNotNull(row.getJsonObject("rates").getDouble("published"));
    }
  }

  @Test
  @DisplayName("a draining node ends its live streams at once rather than waiting out http.drainMs for them")
  void drainEndsLiveStreams() throws Exception {
    try (TestNode node = startNode(new JsonObject().put("http", new JsonObject().put("drainMs", 60_000)))) {
      LiveStream live = LiveStream.open(node.port(), ADMIN);
      live.next(figures -> true, LIVE);
      // the stream is not a request in flight: the stop does not wait the 60 s out
      node.stop().toCompletionStage().toCompletableFuture().get(50, TimeUnit.SECONDS);
      assertTrue(live.endsWithin(Duration.ofSeconds(5)), "the stream was ended");
      live.close();
    }
  }

  private static int backlogOf(JsonObject figures, String consumer) {
    JsonObject row = LiveStream.row(figures, consumer);
    return row == null ? -1 : row.getInteger("backlog");
  }
}
