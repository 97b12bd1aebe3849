package io.herald.metrics;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.auth.ApiKey;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.NodeConfig;
import io.herald.testing.Scrape;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(90)
@NodeConfig("""
    {"management": {"consumerGaugesMs": 100}}""")
class MetricsIT extends GatewayTest {
  private static final String ROUTE_PUBLISH = "/v1/topics/(?<topic>.+)/events";

  private static JsonObject nack(String action, String ackId) {
    return new JsonObject().put("action", action).put("ackIds", new JsonArray().add(ackId));
  }

  @Test
  @DisplayName("what a node did is counted: publishes by outcome, deliveries by transport, redeliveries, acks by result, script calls; labels never carry ids or topics")
  void countsWhatTheNodeDid() {
    String topic = unique("metrics/orders");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    String closed = unique("metrics/closed");
    assertEquals(200, http().put("/v1/admin/topics/" + closed, new JsonObject().put("enabled", false)).status());
    Scrape before = Scrape.of(http());

    List<String> eventIds = new ArrayList<>(confirmed(http().publish(topic, events(1, 2, 3))));
    assertEquals("TOPIC_DISABLED", http().publish(closed, event(4)).errorCode());
    Http.Reply polled = http().poll(consumer, max(10));
    assertEquals(3, polled.events().size());
    List<String> ackIds = polled.ackIds();
    assertEquals(200, http().ack(consumer, ackIds.get(0), ackIds.get(1)).status());
    assertEquals(200, http().post("/v1/consumers/" + consumer + "/nacks", nack("REQUEUE", ackIds.get(2))).status());
    Http.Reply again = http().poll(consumer, max(10));
    assertEquals(List.of(2L), again.events().stream().map(e -> ((JsonObject) e).getLong("deliveryCount")).toList());
    eventIds.addAll(confirmed(http().publish(topic, event(5))));
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
      assertEquals(1, socket.next().getJsonArray("events").size());
    }

    Scrape after = Scrape.of(http());
    assertEquals(4, delta(before, after, "herald_publish_events_total", "result", "confirmed"));
    assertEquals(1, delta(before, after, "herald_publish_events_total", "result", "TOPIC_DISABLED"));
    assertEquals(5, delta(before, after, "herald_deliveries_total", "transport", "http")
        + delta(before, after, "herald_deliveries_total", "transport", "ws"));
    assertEquals(1, delta(before, after, "herald_deliveries_total", "transport", "ws"));
    assertEquals(1, delta(before, after, "herald_redeliveries_total"));
    assertEquals(2, delta(before, after, "herald_acks_total", "result", "ACKED"));
    assertEquals(4, delta(before, after, "herald_delivery_lag_seconds_count"), "first hand-outs only");
    assertEquals(2, delta(before, after, "herald_publish_confirm_seconds_count"), "the answered publish requests");
    assertTrue(delta(before, after, "herald_redis_script_seconds_count", "script", "poll") >= 3);
    assertTrue(delta(before, after, "vertx_http_server_requests_total", "route", ROUTE_PUBLISH, "code", "200") >= 2,
        "Vert.x's own HTTP metrics, by route template");
    for (String id : eventIds) {
      assertFalse(after.text().contains(id), "no eventId in a label");
    }
    assertFalse(after.text().contains(topic), "no topic (nor raw path) in a label");
    assertFalse(after.text().contains(ackIds.get(0)), "no ackId in a label");
  }

  @Test
  @DisplayName("each consumer's backlog, unacked, dead letters and oldest unacked age come from Redis, alike on every node; dead letters by reason and throttle blocks are counted as they grow")
  void consumerGauges() {
    String topic = unique("metrics/gauges");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("maxDeliveries", 1)), topic);
    String throttled = consumer(new JsonObject().put("rateLimit", new JsonObject().put("tps", 1).put("blockMs", 1000)),
        unique("metrics/throttled"));
    http().publish(topic, events(1, 2, 3, 4, 5));
    List<String> ackIds = http().poll(consumer, max(3)).ackIds();
    // read on the other node: the figures are Redis', not the node's
    Scrape before = await().atMost(Duration.ofSeconds(20)).until(() -> Scrape.of(nodeB.http()),
        scrape -> scrape.value("herald_consumer_unacked", "consumer", consumer) == 3
            && scrape.has("herald_consumer_backlog", "consumer", throttled));

    // over maxDeliveries: dead-lettered; rejected: to the error queue; over 1 poll a second: blocked
    http().post("/v1/consumers/" + consumer + "/nacks", nack("REQUEUE", ackIds.get(0)));
    http().post("/v1/consumers/" + consumer + "/nacks", nack("REJECT", ackIds.get(1)));
    Http.Reply refused = await().atMost(Duration.ofSeconds(10)).until(() -> http().poll(throttled, max(1)),
        reply -> reply.status() == 429);
    assertEquals("TOO_MANY_REQUESTS", refused.errorCode());

    Scrape after = await().atMost(Duration.ofSeconds(20)).until(() -> Scrape.of(nodeB.http()),
        scrape -> scrape.value("herald_consumer_backlog", "consumer", consumer) == 2
            && scrape.value("herald_consumer_unacked", "consumer", consumer) == 1
            && scrape.value("herald_consumer_dead_letters", "consumer", consumer) == 1
            && delta(before, scrape, "herald_throttle_blocks_total") == 1
            && delta(before, scrape, "herald_dead_letters_total", "reason", "REJECTED") == 1);
    assertEquals(1, delta(before, after, "herald_dead_letters_total", "reason", "MAX_DELIVERIES"));
    assertEquals(0, delta(before, after, "herald_dead_letters_total", "reason", "TTL_EXPIRED"));
    await().atMost(Duration.ofSeconds(10)).until(() -> Scrape.of(nodeB.http())
        .value("herald_consumer_oldest_unacked_age_seconds", "consumer", consumer) > 0);

    assertEquals(204, http().delete("/v1/admin/consumers/" + consumer).status());
    Scrape gone = await().atMost(Duration.ofSeconds(20)).until(() -> Scrape.of(nodeB.http()),
        scrape -> !scrape.has("herald_consumer_backlog", "consumer", consumer));
    assertEquals(after.value("herald_dead_letters_total", "reason", "MAX_DELIVERIES"),
        gone.value("herald_dead_letters_total", "reason", "MAX_DELIVERIES"), "a consumer gone takes nothing back");
  }

  @Test
  @DisplayName("the scheduler's lateness is measured when it finds work due")
  void schedulerLateness() {
    String topic = unique("metrics/later");
    String consumer = consumer(new JsonObject(), topic);
    double before = Scrape.of(nodeA.http()).value("herald_scheduler_lateness_seconds_count")
        + Scrape.of(nodeB.http()).value("herald_scheduler_lateness_seconds_count");
    http().publish(topic, event(1));
    String ackId = http().poll(consumer, max(1)).ackIds().get(0);
    http().post("/v1/consumers/" + consumer + "/nacks", nack("REQUEUE", ackId).put("delayMs", 200));
    await().atMost(Duration.ofSeconds(10)).until(() -> Scrape.of(nodeA.http()).value("herald_scheduler_lateness_seconds_count")
        + Scrape.of(nodeB.http()).value("herald_scheduler_lateness_seconds_count") > before);
  }

  @Test
  @DisplayName("scrapes cost Redis nothing per consumer: a pass per interval reads the consumers 20 to a script call")
  void scrapesDoNotReadRedisPerConsumer() {
    try (TestNode node = startNode(new JsonObject().put("management", new JsonObject().put("consumerGaugesMs", 600_000)))) {
      String topic = unique("metrics/many");
      for (int i = 0; i < 120; i++) {
        consumer(new JsonObject(), topic);
      }
      int consumers = http().get("/v1/admin/consumers").json().getJsonArray("consumers").size();
      // the first scrape starts the passes: the first within a second, the next in 10 minutes
      Scrape first = await().atMost(Duration.ofSeconds(20)).until(() -> Scrape.of(node.http()),
          scrape -> scrape.text().split("\nherald_consumer_backlog\\{").length - 1 == consumers);
      // 20 consumers a call (on a cluster, a call for the rest of each primary's)
      double calls = first.value("herald_redis_script_seconds_count", "script", "consumer_gauges");
      assertTrue(calls >= Math.ceil(consumers / 20.0) && calls <= Math.ceil(consumers / 20.0) + 2,
          calls + " calls for " + consumers + " consumers");
      Scrape last = first;
      for (int i = 0; i < 30; i++) {
        last = Scrape.of(node.http());
      }
      assertEquals(0, delta(first, last, "herald_redis_script_seconds_count", "script", "consumer_gauges"),
          "scrapes read what the pass found");
      assertFalse(last.has("herald_redis_script_seconds_count", "script", "metadata"));
    }
  }

  @Test
  @DisplayName("with credentials configured /metrics asks for an admin grant; the management listener serves health and metrics without, and nothing else")
  void managementListener() {
    String secret = "hk_metrics_admin_0123456789";
    JsonObject config = new JsonObject()
        .put("auth", new JsonObject().put("keys", new JsonObject().put("ops", new JsonObject()
            .put("sha256", HexFormat.of().formatHex(ApiKey.hash(secret))).put("admin", true))))
        .put("management", new JsonObject().put("port", 0));
    try (TestNode node = startNode(config)) {
      assertEquals("UNAUTHENTICATED", node.http().get("/metrics").errorCode());
      assertTrue(Scrape.of(node.http().withToken(secret)).has("herald_redeliveries_total"));
      Http management = new Http("http://127.0.0.1:" + node.managementPort());
      assertEquals(200, management.get("/health/live").status());
      assertEquals(200, management.get("/health/ready").status());
      Scrape scrape = Scrape.of(management);
      assertTrue(scrape.has("herald_redeliveries_total") && scrape.has("vertx_http_server_requests_total"),
          "the node's meters and Vert.x's");
      assertEquals("NOT_FOUND", management.get("/v1/admin/consumers").errorCode());
    }
  }

  @Test
  @DisplayName("every metric k8s/grafana-dashboard.json charts is one a node serves")
  void dashboardChartsServedMetrics() throws Exception {
    Set<String> charted = new TreeSet<>();
    String dashboard = Files.readString(Path.of("k8s/grafana-dashboard.json"));
    Matcher names = Pattern.compile("\\b((?:herald|vertx)_[a-z_]+)").matcher(dashboard);
    while (names.find()) {
      charted.add(names.group(1));
    }
    assertTrue(charted.size() > 10, charted.toString());
    String topic = unique("metrics/dashboard");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    assertEquals(200, http().ack(consumer, http().poll(consumer, max(1)).ackIds().get(0)).status());
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
      assertEquals(1, socket.next().getJsonArray("events").size());
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        Scrape scrape = Scrape.of(http());
        assertEquals(List.of(), charted.stream().filter(name -> !scrape.has(name)).toList(), "charted, not served");
        assertTrue(scrape.has("herald_consumer_backlog", "consumer", consumer));
      });
    }
  }

  private static List<String> confirmed(Http.Reply published) {
    return published.results().stream().map(r -> ((JsonObject) r).getString("eventId")).toList();
  }

  private static double delta(Scrape before, Scrape after, String name, String... labels) {
    return after.value(name, labels) - before.value(name, labels);
  }
}
