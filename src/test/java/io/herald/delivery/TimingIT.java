package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * When things happen, as a client sees them: timed work done when it falls due, ages measured from
 * the hand-out, error frames answered at once, a node serving as soon as it started. With the
 * scheduler's default tick (the tests' nodes otherwise tick faster), and busy neighbours: other
 * consumers' long polls parked and woken by a steady stream of publishes, as beside the other tests
 * of a suite run at once. {@link TimingOnClusterIT} runs them on a 3-primary Redis Cluster.
 */
@NodeConfig("{\"scheduler\":{\"tickMs\":25}}")
class TimingIT extends GatewayTest {
  /** How late timed work may be done, on a busy 2-core machine; the scheduler ticks every 25 ms. */
  private static final long LATE_MS = 750;
  private static final int NEIGHBOURS = 3;
  private static final int PARKED_EACH = 10;
  private static ExecutorService neighbours;
  private static volatile boolean quiet;

  @BeforeAll
  static void busyNeighbours() {
    neighbours = Executors.newFixedThreadPool(NEIGHBOURS * PARKED_EACH + 1);
    List<String> topics = new ArrayList<>();
    for (int i = 0; i < NEIGHBOURS; i++) {
      String topic = unique("neighbour");
      String consumer = consumer(new JsonObject().put("ackMode", "auto"), topic);
      topics.add(topic);
      for (int p = 0; p < PARKED_EACH; p++) {
        neighbours.submit(() -> {
          while (!quiet) {
            http().poll(consumer, new JsonObject().put("maxEvents", 1).put("waitMs", 2000));
          }
          return null;
        });
      }
    }
    neighbours.submit(() -> {
      while (!quiet) {
        topics.forEach(topic -> http().publish(topic, events("neighbourly")));
        // 20 publishes a second per neighbour: steady, not a flood
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
      return null;
    });
  }

  @AfterAll
  static void quietNeighbours() throws InterruptedException {
    quiet = true;
    neighbours.shutdown();
    assertTrue(neighbours.awaitTermination(10, TimeUnit.SECONDS));
  }

  private static String handOut(String consumer, String topic) {
    assertEquals(200, http().publish(topic, events("timed")).status());
    Reply polled = http().poll(consumer, max(1));
    assertEquals(1, polled.ackIds().size(), polled.body());
    return polled.ackIds().get(0);
  }

  private static Reply nack(String consumer, String ackId, Long delayMs) {
    JsonObject body = new JsonObject().put("ackIds", new JsonArray().add(ackId)).put("action", "REQUEUE");
    Reply nacked = http().post("/v1/consumers/" + consumer + "/nacks", delayMs == null ? body : body.put("delayMs", delayMs));
    assertEquals("REQUEUED", nacked.results().getJsonObject(0).getString("status"), nacked.body());
    return nacked;
  }

  @Test
  @DisplayName("a long poll parked while a nacked event waits out its delay is answered with it when the delay ends, on the node of the nack and on another")
  void longPollAnsweredWhenNackDelayEnds() {
    for (TestNode polled : List.of(nodeA, nodeB)) {
      String topic = unique("due");
      String consumer = consumer(new JsonObject(), topic);
      String ackId = handOut(consumer, topic);
      nack(consumer, ackId, 1000L);
      long nacked = System.nanoTime();
      Reply answer = polled.http().poll(consumer, new JsonObject().put("maxEvents", 1).put("waitMs", 10_000));
      long tookMs = (System.nanoTime() - nacked) / 1_000_000;
      assertEquals(1, answer.events().size(), answer.body());
      assertEquals(2, answer.events().getJsonObject(0).getInteger("deliveryCount"));
      assertTrue(tookMs < 1000 + LATE_MS, "answered " + tookMs + " ms after the nack of 1000 ms");
    }
  }

  @Test
  @DisplayName("a REQUEUE without delayMs is handed out again when its 1 s backoff ends")
  void requeueRedeliveredWhenBackoffEnds() {
    String topic = unique("backoff");
    String consumer = consumer(new JsonObject().put("redelivery", new JsonObject().put("initialDelayMs", 1000)), topic);
    String ackId = handOut(consumer, topic);
    nack(consumer, ackId, null);
    long nacked = System.nanoTime();
    await().pollInterval(Duration.ofMillis(20)).atMost(Duration.ofSeconds(10))
        .until(() -> http().poll(consumer, max(1)).events().size() == 1);
    long tookMs = (System.nanoTime() - nacked) / 1_000_000;
    assertTrue(tookMs < 1000 + LATE_MS, "handed out again " + tookMs + " ms after the nack");
  }

  @Test
  @DisplayName("oldestUnackedAgeMs is the time since the oldest unacked event was handed out")
  void oldestUnackedAgeIsSinceTheHandOut() {
    String topic = unique("age");
    String consumer = consumer(new JsonObject(), topic);
    assertEquals(200, http().publish(topic, events("aged")).status());
    long beforePoll = System.nanoTime();
    assertEquals(1, http().poll(consumer, max(1)).ackIds().size());
    long afterPoll = System.nanoTime();
    await().pollDelay(Duration.ofSeconds(1)).until(() -> true);
    long beforeMetadata = System.nanoTime();
    long ageMs = http().metadata(consumer).json().getLong("oldestUnackedAgeMs");
    long afterMetadata = System.nanoTime();
    // Redis' clock and this one differ in rate by far less than the slack of a few ms
    long leastMs = (beforeMetadata - afterPoll) / 1_000_000 - 5;
    long mostMs = (afterMetadata - beforePoll) / 1_000_000 + 5;
    assertTrue(ageMs >= leastMs && ageMs <= mostMs, "age " + ageMs + " ms, expected " + leastMs + ".." + mostMs);
  }

  @Test
  @DisplayName("an unparsable frame on a consumer socket gets its error frame at once, also while the socket waits for events")
  void unparsableFrameAnsweredAtOnce() {
    String topic = unique("frames");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("requestId", "s"));
      for (int i = 0; i < 5; i++) {
        long sent = System.nanoTime();
        socket.sendText("{not json " + i);
        JsonObject answer = socket.next(1000);
        long tookMs = (System.nanoTime() - sent) / 1_000_000;
        while (answer != null && !"error".equals(answer.getString("type"))) {
          answer = socket.next(1000);
        }
        assertTrue(answer != null && "INVALID_REQUEST".equals(answer.getString("code")), "no error frame: " + answer);
        assertTrue(tookMs < 1000, "error frame after " + tookMs + " ms");
      }
    }
  }

  @Test
  @DisplayName("a node that has started serves publishes, polls and acks at once: no STORE_UNAVAILABLE while it warms up")
  void servesAsSoonAsStarted() {
    String topic = unique("start");
    String consumer = consumer(new JsonObject(), topic);
    try (TestNode fresh = startNode()) {
      Reply published = fresh.http().publish(topic, events("first"));
      Reply polled = fresh.http().poll(consumer, max(1));
      Reply acked = polled.ackIds().isEmpty() ? polled : fresh.http().ack(consumer, polled.ackIds().get(0));
      assertEquals(List.of(), Stream.of(published, polled, acked).filter(reply -> reply.status() != 200)
          .map(reply -> reply.status() + " " + reply.body()).toList());
      assertEquals("ACKED", acked.results().getJsonObject(0).getString("status"));
    }
  }
}
