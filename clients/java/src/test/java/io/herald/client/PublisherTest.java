package io.herald.client;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class PublisherTest {
  private static Gateways gateways;

  @BeforeAll
  static void start() throws Exception {
    gateways = new Gateways(1);
  }

  @AfterAll
  static void stop() throws Exception {
    gateways.close();
  }

  private static HeraldClient client(String... urls) {
    HeraldClient.Builder builder = HeraldClient.builder();
    for (String url : urls) {
      builder.endpoint(url);
    }
    return builder.build();
  }

  private static HeraldException refusal(CompletableFuture<?> future) {
    CompletionException failure = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class, future::join);
    return assertInstanceOf(HeraldException.class, failure.getCause());
  }

  @Test
  @DisplayName("events are batched per topic, each future confirmed with its eventId, in publish order")
  void batchesAndConfirms() throws Exception {
    String topic = Gateways.topic("publish");
    String consumer = gateways.consumer(topic, "\"maxPollRecords\":1000");
    List<CompletableFuture<PublishResult>> results = new ArrayList<>();
    try (HeraldClient herald = client(gateways.url(0));
         Publisher publisher = herald.publisher(PublisherSettings.defaults().withMaxBatchEvents(100))) {
      for (int i = 0; i < 250; i++) {
        results.add(publisher.publish(topic, Event.of(Map.of("n", i)).key("k-" + (i % 3)).header("source", "test")));
      }
    }
    List<String> eventIds = results.stream().map(CompletableFuture::join).map(PublishResult::eventId).toList();
    assertEquals(250, eventIds.stream().distinct().count());
    assertEquals(eventIds.stream().sorted().toList(), eventIds, "eventIds sort in publish order");
    assertTrue(results.stream().map(CompletableFuture::join).allMatch(r -> r.matched() == 1 && !r.duplicate()));
    assertEquals(250, gateways.metadata(consumer).path("backlog").asInt());
  }

  @Test
  @DisplayName("a refused event fails its own future with the gateway's code; a refused request fails all, without retries")
  void refusals() throws Exception {
    String topic = Gateways.topic("refused");
    gateways.consumer(topic, "");
    assertEquals(200, gateways.send("PUT", "/v1/admin/topics/" + topic, "{\"maxEventBytes\":1024}").statusCode());
    try (HeraldClient herald = client(gateways.url(0)); Publisher publisher = herald.publisher()) {
      CompletableFuture<PublishResult> small = publisher.publish(topic, Event.of("small"));
      CompletableFuture<PublishResult> large = publisher.publish(topic, Event.of("x".repeat(2000)));
      assertEquals(1, small.join().matched());
      HeraldException tooLarge = refusal(large);
      assertEquals("MESSAGE_TOO_LARGE", tooLarge.code());
      assertEquals(413, tooLarge.status());
      assertFalse(tooLarge.isTransient());

      assertEquals(200, gateways.send("PUT", "/v1/admin/topics/" + topic, "{\"enabled\":false}").statusCode());
      HeraldException disabled = refusal(publisher.publish(topic, Event.of(1)));
      assertEquals("TOPIC_DISABLED", disabled.code());
      assertEquals(409, disabled.status());
    }
  }

  @Test
  @DisplayName("a node that does not answer: the next endpoint gets the batch")
  void failsOver() throws Exception {
    String topic = Gateways.topic("failover");
    String consumer = gateways.consumer(topic, "");
    try (HeraldClient herald = client("http://127.0.0.1:" + Gateways.freePort(), gateways.url(0));
         Publisher publisher = herald.publisher()) {
      assertEquals(1, publisher.publish(topic, Event.of("to the second node")).join().matched());
    }
    assertEquals(1, gateways.metadata(consumer).path("backlog").asInt());
  }

  @Test
  @DisplayName("Redis away: batches are retried (503) until it is back, each event stored once; past maxInFlight publish blocks")
  void retriesWhileRedisIsAwayAndBlocksBeyondTheWindow() throws Exception {
    String topic = Gateways.topic("retry");
    String consumer = gateways.consumer(topic, "");
    try (HeraldClient herald = client(gateways.url(0));
         Publisher publisher = herald.publisher(PublisherSettings.defaults().withMaxInFlight(10).withMaxBatchEvents(4))) {
      gateways.stopRedis();
      List<CompletableFuture<PublishResult>> results = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        results.add(publisher.publish(topic, Event.of(i)));
      }
      AtomicReference<CompletableFuture<PublishResult>> eleventh = new AtomicReference<>();
      Thread blocked = new Thread(() -> {
        try {
          eleventh.set(publisher.publish(topic, Event.of(10)));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      blocked.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> blocked.getState() == Thread.State.WAITING);
      assertTrue(results.stream().noneMatch(CompletableFuture::isDone), "nothing is confirmed while Redis is away");

      gateways.startRedis();
      blocked.join(30_000);
      results.add(eleventh.get());
      results.forEach(CompletableFuture::join);
    }
    assertEquals(11, gateways.metadata(consumer).path("backlog").asInt());
  }

  @Test
  @DisplayName("the same idempotencyKey twice: one event, the second publish answered as a duplicate of the first")
  void idempotencyKey() throws Exception {
    String topic = Gateways.topic("dedup");
    String consumer = gateways.consumer(topic, "");
    try (HeraldClient herald = client(gateways.url(0)); Publisher publisher = herald.publisher()) {
      PublishResult first = publisher.publish(topic, Event.of("once").idempotencyKey("order-42")).join();
      PublishResult again = publisher.publish(topic, Event.of("once").idempotencyKey("order-42")).join();
      assertEquals(first.eventId(), again.eventId());
      assertTrue(again.duplicate());
    }
    assertEquals(1, gateways.metadata(consumer).path("backlog").asInt());
  }
}
