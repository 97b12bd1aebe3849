package io.herald.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.NodeConfig;
import io.herald.testing.Scrape;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
    for (String outside : List.of("/console/%2e%2e/logback.xml", "/console/..%2flogback.xml", "/console/%2e%2e%2flogback.xml")) {
      Http.Reply reply = http().get(outside);
      assertTrue(reply.status() >= 400 && !reply.body().contains("<configuration"), outside + ": " + reply.status());
    }

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
      // between the read before the publish and this one
      assertTrue(LiveStream.row(published, consumer).getJsonObject("rates").getDouble("published") > 0, published.encode());

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
      assertEquals(0.0, row.getJsonObject("rates").getDouble("acked"));
    }
    // once no console watches, passes go back to the scrape interval (30 s): a quiet stretch of 3 s
    // comes, which passes a second apart would never leave
    double[] calls = {-1};
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(3)).until(() -> {
      double now = Scrape.of(admin()).value("herald_redis_script_seconds_count", "script", "consumer_gauges");
      boolean quiet = now == calls[0];
      calls[0] = now;
      return quiet;
    });
  }

  @Test
  @DisplayName("a draining node ends its live streams while it waits for the requests in flight, and the stop does not wait for them")
  void drainEndsLiveStreams() throws Exception {
    try (TestNode node = startNode(new JsonObject().put("http", new JsonObject().put("drainMs", 60_000)));
        LiveStream live = LiveStream.open(node.port(), ADMIN)) {
      live.next(figures -> true, LIVE);
      Socket slow = new Socket(InetAddress.getLoopbackAddress(), node.port());
      // a publish whose body never finishes arriving keeps the node draining
      slow.getOutputStream().write(("POST /v1/topics/late/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "
          + ADMIN + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"payload\":")
          .getBytes(StandardCharsets.US_ASCII));
      slow.getOutputStream().flush();
      await().until(() -> node.http().get("/health/live").status() == 200);

      CompletableFuture<Void> stopped = node.stop().toCompletionStage().toCompletableFuture();
      assertTrue(live.endsWithin(Duration.ofSeconds(10)), "the stream was ended");
      assertFalse(stopped.isDone(), "still draining: the publish is in flight");
      // the stream is not a request in flight: once the publish's connection is gone, the stop
      // does not wait the 60 s out
      slow.close();
      stopped.get(30, TimeUnit.SECONDS);
    }
  }

  private static int backlogOf(JsonObject figures, String consumer) {
    JsonObject row = LiveStream.row(figures, consumer);
    return row == null ? -1 : row.getInteger("backlog");
  }
}
