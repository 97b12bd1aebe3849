package io.herald.ws;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.FreezingProxy;
import io.herald.delivery.Batch;
import io.herald.delivery.PollService;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.LiveHeap;
import io.herald.testing.Scrape;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class PushIT extends GatewayTest {

  private static TestSocket open(TestNode node, String consumer) {
    return node.consumerSocket(consumer);
  }

  private static void subscribe(TestSocket socket, int window) {
    socket.send(new JsonObject().put("op", "subscribe").put("window", window).put("requestId", "s"));
    JsonObject subscribed = socket.next();
    assertEquals("subscribed", subscribed.getString("type"), subscribed.encode());
  }

  /** Reads pushed batches until {@code count} events came; returns them. */
  private static List<JsonObject> pushed(TestSocket socket, int count) {
    List<JsonObject> events = new ArrayList<>();
    while (events.size() < count) {
      JsonObject frame = socket.next();
      assertEquals("batch", frame.getString("type"), frame.encode());
      frame.getJsonArray("events").forEach(e -> events.add((JsonObject) e));
    }
    assertEquals(count, events.size());
    return events;
  }

  @Test
  @DisplayName("push keeps at most window deliveries of the socket unacked; an ack over the socket opens it again")
  void windowHoldsUntilAck() {
    String topic = unique("window");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3, 4, 5));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 2);
      List<JsonObject> first = pushed(socket, 2);
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"), "nothing pushed beyond the window");
      JsonObject metadata = http().metadata(consumer).json();
      assertEquals(2, metadata.getLong("unacked"));
      assertEquals(3, metadata.getLong("backlog"));

      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(first.get(0).getString("ackId"))));
      assertEquals("ackResult", socket.next().getString("type"));
      assertEquals(3, pushed(socket, 1).get(0).getInteger("payload"));
    }
  }

  @Test
  @DisplayName("a pushed delivery acked or nacked over HTTP, through any node, leaves the socket's window too")
  void settledElsewhereOpensWindow() {
    String topic = unique("elsewhere");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 1);
      JsonObject first = pushed(socket, 1).get(0);
      assertEquals("ACKED", nodeB.http().ack(consumer, first.getString("ackId")).results().getJsonObject(0).getString("status"));
      JsonObject second = pushed(socket, 1).get(0);
      assertEquals(2, second.getInteger("payload"));
      nodeB.http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray().add(second.getString("ackId"))).put("action", "REJECT"));
      assertEquals(3, pushed(socket, 1).get(0).getInteger("payload"));
    }
  }

  private static double stillOutChecks(TestNode node) {
    return Scrape.of(node.http()).value("herald_redis_script_seconds_count", "script", "still_out");
  }

  @Test
  @DisplayName("a full window is told of an ack or nack over HTTP through another node at once, also once its still-out checks have grown seconds apart")
  void toldOfSettlementsElsewhere() {
    String topic = unique("told");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 1);
      JsonObject first = pushed(socket, 1).get(0);
      // a full window checks 0.2, 0.6, 1.4 and 3.0 s after it filled; the next check is 3.2 s later
      double before = stillOutChecks(nodeA);
      await().atMost(Duration.ofSeconds(10)).until(() -> stillOutChecks(nodeA) - before >= 4);
      long acked = System.nanoTime();
      assertEquals("ACKED", nodeB.http().ack(consumer, first.getString("ackId")).results().getJsonObject(0).getString("status"));
      JsonObject second = pushed(socket, 1).get(0);
      long tookMs = (System.nanoTime() - acked) / 1_000_000;
      assertEquals(2, second.getInteger("payload"));
      assertTrue(tookMs < 1000, "pushed " + tookMs + " ms after the ack");

      double again = stillOutChecks(nodeA);
      await().atMost(Duration.ofSeconds(10)).until(() -> stillOutChecks(nodeA) - again >= 4);
      long nacked = System.nanoTime();
      nodeB.http().post("/v1/consumers/" + consumer + "/nacks", new JsonObject()
          .put("ackIds", new JsonArray().add(second.getString("ackId"))).put("action", "REJECT"));
      assertEquals(3, pushed(socket, 1).get(0).getInteger("payload"));
      tookMs = (System.nanoTime() - nacked) / 1_000_000;
      assertTrue(tookMs < 1000, "pushed " + tookMs + " ms after the nack");
    }
  }

  @Test
  @DisplayName("under a stream of HTTP acks of other deliveries a full window checks a few times a second, not once per ack")
  void toldChecksAreSpaced() {
    String topic = unique("spaced");
    // 200 polls back to back: above the default 100 per second on a fast machine
    String consumer = consumer(new JsonObject().put("rateLimit", new JsonObject().put("tps", 10_000)), topic);
    http().publish(topic, events(0));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 1);
      pushed(socket, 1);
      double before = stillOutChecks(nodeA);
      await().atMost(Duration.ofSeconds(10)).until(() -> stillOutChecks(nodeA) - before >= 1); // filed
      double filed = stillOutChecks(nodeA);
      long started = System.nanoTime();
      for (int i = 0; i < 200; i++) {
        http().publish(topic, events(i));
        Reply polled = nodeB.http().poll(consumer, max(1));
        assertEquals(200, polled.status(), polled::body);
        List<String> ackIds = polled.ackIds();
        assertEquals(1, ackIds.size());
        nodeB.http().ack(consumer, ackIds.get(0));
      }
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      double checks = stillOutChecks(nodeA) - filed;
      // one told check per 100 ms at most, and the periodic ones
      assertTrue(checks <= tookMs / 100.0 + 5, checks + " checks in " + tookMs + " ms of 200 acks");
      assertTrue(checks >= 2, "the window was told of none of them");
    }
  }

  @Test
  @DisplayName("an event published through another node reaches a subscribed socket without a poll")
  void pushAcrossNodes() {
    String topic = unique("across");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 10);
      String eventId = nodeB.http().publish(topic, event("hi")).results().getJsonObject(0).getString("eventId");
      assertEquals(eventId, pushed(socket, 1).get(0).getString("eventId"));
    }
  }

  @Test
  @DisplayName("sockets of one consumer on different nodes share its events fairly, each event going to one of them")
  void fairAcrossSockets() throws Exception {
    String topic = unique("fair");
    String consumer = consumer(new JsonObject(), topic);
    int total = 300;
    Set<String> delivered = ConcurrentHashMap.newKeySet();
    List<TestSocket> sockets = List.of(open(nodeA, consumer), open(nodeA, consumer), open(nodeB, consumer));
    List<CompletableFuture<Integer>> shares = new ArrayList<>();
    try {
      for (TestSocket socket : sockets) {
        subscribe(socket, 10);
        shares.add(CompletableFuture.supplyAsync(() -> readAndAck(socket, delivered, total)));
      }
      for (int i = 0; i < total; i++) {
        (i % 2 == 0 ? nodeA : nodeB).http().publish(topic, event(i));
      }
      List<Integer> received = shares.stream().map(CompletableFuture::join).toList();
      assertEquals(total, delivered.size());
      assertEquals(total, received.stream().mapToInt(Integer::intValue).sum(), "each event to one socket: " + received);
      // in turn, each socket would get 100; a race to the events gives shares like 5/13/282
      assertTrue(received.stream().allMatch(share -> share >= total / 6), "shares " + received);
    } finally {
      sockets.forEach(TestSocket::close);
    }
  }

  /** Acks every event pushed to {@code socket} until {@code total} were delivered to any socket; returns its share. */
  private static int readAndAck(TestSocket socket, Set<String> delivered, int total) {
    int share = 0;
    while (delivered.size() < total) {
      JsonObject frame = socket.next(200);
      if (frame == null || !"batch".equals(frame.getString("type"))) {
        continue;
      }
      JsonArray ackIds = new JsonArray();
      for (Object event : frame.getJsonArray("events")) {
        delivered.add(((JsonObject) event).getString("eventId"));
        ackIds.add(((JsonObject) event).getString("ackId"));
        share++;
      }
      socket.send(new JsonObject().put("op", "ack").put("ackIds", ackIds));
    }
    return share;
  }

  @Test
  @DisplayName("a pushed delivery not acked by its deadline is pushed again, with deliveryCount 2")
  void stalePushedAgain() {
    String topic = unique("stalepush");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("again"));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 1);
      JsonObject first = pushed(socket, 1).get(0);
      JsonObject again = pushed(socket, 1).get(0);
      assertEquals(first.getString("eventId"), again.getString("eventId"));
      assertEquals(2, again.getInteger("deliveryCount"));
    }
  }

  @Test
  @DisplayName("an extension over the socket that brings the deadline nearer: the window reopens after it, and the event goes out again")
  void shortenedDeadlineReopensWindow() {
    String topic = unique("shortened");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 3_600_000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("soon"));
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 1);
      JsonObject first = pushed(socket, 1).get(0);
      socket.send(new JsonObject().put("op", "extend").put("extendMs", 1_000)
          .put("ackIds", new JsonArray().add(first.getString("ackId"))));
      assertEquals("EXTENDED", socket.next().getJsonArray("results").getJsonObject(0).getString("status"));
      // the window's deadline timer was armed for the hour; the extension's second re-arms it (the
      // full window's still-out checks would find the lapsed delivery too, a little later)
      JsonObject again = pushed(socket, 1).get(0);
      assertEquals(first.getString("eventId"), again.getString("eventId"));
      assertEquals(2, again.getInteger("deliveryCount"));
    }
  }

  @Test
  @DisplayName("after unsubscribe nothing is pushed; polls still work")
  void unsubscribeStops() {
    String topic = unique("unsub");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = open(nodeA, consumer)) {
      subscribe(socket, 10);
      socket.send(new JsonObject().put("op", "unsubscribe"));
      assertEquals("unsubscribed", socket.next().getString("type"));
      http().publish(topic, event(1));
      socket.send(new JsonObject().put("op", "ping"));
      assertEquals("pong", socket.next().getString("type"));
      assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
      socket.send(new JsonObject().put("op", "poll"));
      assertEquals(1, socket.next().getJsonArray("events").size());
    }
  }

  @Test
  @DisplayName("maxUnacked holds across every socket and HTTP poller of one consumer, on any node")
  void maxUnackedAcrossConnections() {
    String topic = unique("cap");
    String consumer = consumer(new JsonObject().put("maxUnacked", 3), topic);
    http().publish(topic, events(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
    try (TestSocket first = open(nodeA, consumer); TestSocket second = open(nodeB, consumer)) {
      subscribe(first, 3);
      subscribe(second, 3);
      Reply polled = nodeB.http().poll(consumer, max(10));
      await().atMost(Duration.ofSeconds(10)).until(() -> http().metadata(consumer).json().getLong("unacked") == 3);
      // nothing more goes out: the sockets answer a ping before any batch beyond the cap
      int pushed = 0;
      for (TestSocket socket : List.of(first, second)) {
        socket.send(new JsonObject().put("op", "ping"));
        for (JsonObject frame = socket.next(); !"pong".equals(frame.getString("type")); frame = socket.next()) {
          pushed += frame.getJsonArray("events").size();
        }
      }
      assertEquals(3, pushed + polled.events().size());
      JsonObject metadata = http().metadata(consumer).json();
      assertEquals(3, metadata.getLong("unacked"));
      assertEquals(7, metadata.getLong("backlog"));
      assertEquals("MAX_UNACKED", nodeA.http().poll(consumer, max(10)).json().getString("heldBack"));
    }
  }

  @Test
  @DisplayName("subscribe needs a window within 1..maxUnacked")
  void windowValidated() {
    String consumer = consumer(new JsonObject().put("maxUnacked", 5), unique("badwindow"));
    try (TestSocket socket = open(nodeA, consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 6));
      JsonObject error = socket.next();
      assertEquals("error", error.getString("type"));
      assertEquals("window", error.getJsonObject("details").getString("field"));
    }
  }

  @Test
  @DisplayName("a client that stops reading with 10,000 events waiting stops the pushing (no unbounded buffering); it resumes when the client reads again")
  void slowReaderHoldsBack() throws Exception {
    String topic = unique("slow");
    String consumer = consumer(new JsonObject().put("maxUnacked", 10_000).put("maxPollRecords", 100), topic);
    String payload = "x".repeat(8_000);
    for (int i = 0; i < 100; i++) {
      JsonArray batch = new JsonArray();
      for (int j = 0; j < 100; j++) {
        batch.add(new JsonObject().put("payload", payload));
      }
      http().publish(topic, new JsonObject().put("events", batch));
    }
    try (FreezingProxy proxy = new FreezingProxy(nodeA.port());
        TestSocket socket = TestSocket.connect(proxy.port(), "/v1/consumers/" + consumer + "/ws")) {
      proxy.stallOpenConnections();
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10_000));
      // the handed-out count settles (write queue full, pushing paused) long before the backlog is gone
      long[] last = {-1};
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
        long unacked = http().metadata(consumer).json().getLong("unacked");
        boolean settled = unacked == last[0];
        last[0] = unacked;
        return settled && unacked > 0;
      });
      JsonObject metadata = http().metadata(consumer).json();
      assertTrue(metadata.getLong("backlog") > 0, "pushing paused with events left: " + metadata.encode());
      assertTrue(metadata.getLong("unacked") < 5000, metadata.encode());

      proxy.unstall();
      await().atMost(Duration.ofSeconds(15)).until(() -> http().metadata(consumer).json().getLong("backlog") == 0);
    }
  }

  @Test
  @DisplayName("a socket keeps none of the batches it pushed or answered: hundreds of fetches and polls over one socket leave none reachable")
  void answeredFetchesAreNotKept() {
    String topic = unique("kept");
    String consumer = consumer(new JsonObject().put("rateLimit", new JsonObject().put("tps", 10_000)), topic);
    int events = 400;
    JsonArray batch = new JsonArray();
    for (int i = 0; i < events; i++) {
      batch.add(new JsonObject().put("payload", i));
    }
    http().publish(topic, new JsonObject().put("events", batch));
    try (TestSocket socket = open(nodeA, consumer)) {
      // half through poll frames, half pushed with a window of one: one fetch per event
      for (int i = 0; i < events / 2; i++) {
        socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1).put("requestId", "p" + i));
        JsonObject answer = socket.next();
        assertEquals("batch", answer.getString("type"), answer.encode());
        ack(socket, answer.getJsonArray("events").getJsonObject(0));
      }
      subscribe(socket, 1);
      // a window freed by the socket's check of what is still out may push the next event before
      // the ack's own answer: frames are taken in whatever order they come
      int pushedEvents = 0;
      int ackResults = 0;
      while (pushedEvents < events / 2 || ackResults < pushedEvents) {
        JsonObject frame = socket.next();
        if ("batch".equals(frame.getString("type"))) {
          for (Object event : frame.getJsonArray("events")) {
            socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(((JsonObject) event).getString("ackId"))));
            pushedEvents++;
          }
        } else {
          assertEquals("ackResult", frame.getString("type"), frame.encode());
          ackResults++;
        }
      }
      // the socket is still open: what it handed out is settled and must not be reachable
      long batches = LiveHeap.instances(Batch.class);
      long polls = LiveHeap.instances(PollService.Poll.class);
      assertTrue(batches < 20 && polls < 20, batches + " batches and " + polls + " polls reachable");
    }
  }

  private static void ack(TestSocket socket, JsonObject event) {
    socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(event.getString("ackId"))));
    JsonObject result = socket.next();
    assertEquals("ackResult", result.getString("type"), result.encode());
  }
}
