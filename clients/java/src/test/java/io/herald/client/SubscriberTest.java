package io.herald.client;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Both subscribers, push (WebSocket) and polling (HTTP), against the same behaviours. */
@Timeout(120)
class SubscriberTest {
  private static Gateways gateways;
  private static HeraldClient herald;

  /** Which subscriber a test runs. */
  enum Transport {
    PUSH, POLLING;

    Subscriber subscriber(HeraldClient client, String consumer, EventHandler handler, SubscriberSettings settings) {
      return this == PUSH ? client.subscriber(consumer, handler, settings) : client.pollingSubscriber(consumer, handler, settings);
    }
  }

  @BeforeAll
  static void start() throws Exception {
    gateways = new Gateways(1);
    herald = HeraldClient.builder().endpoint(gateways.url(0)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    herald.close();
    gateways.close();
  }

  private static SubscriberSettings fast() {
    return SubscriberSettings.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(500));
  }

  private static List<String> publish(String topic, int count) throws InterruptedException {
    List<String> eventIds = new ArrayList<>();
    try (Publisher publisher = herald.publisher()) {
      List<java.util.concurrent.CompletableFuture<PublishResult>> results = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        results.add(publisher.publish(topic, Event.of(Map.of("n", i))));
      }
      results.forEach(r -> eventIds.add(r.join().eventId()));
    }
    return eventIds;
  }

  private static JsonNode metadata(String consumer) {
    return gateways.metadata(consumer);
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("every event reaches the handler, on a handler thread, and is acked when it returns (window capped at maxUnacked)")
  void handlesAndAcks(Transport transport) throws Exception {
    String topic = Gateways.topic("handled");
    String consumer = gateways.consumer(topic, "\"maxUnacked\":10");
    List<String> seen = new CopyOnWriteArrayList<>();
    Set<String> threads = ConcurrentHashMap.newKeySet();
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> {
      seen.add(delivery.eventId());
      threads.add(Thread.currentThread().getName());
    }, fast().withWindow(20)).start()) {
      List<String> published = publish(topic, 100);
      await().atMost(Duration.ofSeconds(30)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 100);
      assertEquals(Set.copyOf(published), Set.copyOf(seen));
      assertEquals(100, seen.size());
      assertTrue(threads.stream().allMatch(name -> name.startsWith("herald-" + consumer + "-handler-")), threads.toString());
      assertEquals(0, metadata(consumer).path("unacked").asInt());
      assertEquals(100, subscriber.stats().acked());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("a handler that throws: the delivery is nacked with the exception as its reason and comes again")
  void throwingHandlerNacks(Transport transport) throws Exception {
    String topic = Gateways.topic("nacked");
    String consumer = gateways.consumer(topic, "\"redelivery\":{\"initialDelayMs\":0}");
    List<Integer> deliveryCounts = new CopyOnWriteArrayList<>();
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> {
      deliveryCounts.add(delivery.deliveryCount());
      if (delivery.deliveryCount() == 1) {
        throw new IllegalStateException("first time fails");
      }
    }, fast()).start()) {
      String eventId = publish(topic, 1).get(0);
      await().atMost(Duration.ofSeconds(30)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 1);
      assertEquals(List.of(1, 2), deliveryCounts);
      String history = gateways.history(consumer, eventId).toString();
      assertTrue(history.contains("first time fails"), history);
      assertEquals(1, subscriber.stats().nacked());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("a handler slower than the ack timeout is extended while it runs, not redelivered")
  void slowHandlerIsExtended(Transport transport) throws Exception {
    String topic = Gateways.topic("slow");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":5000,\"redelivery\":{\"initialDelayMs\":0}");
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger calls = new AtomicInteger();
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> {
      calls.incrementAndGet();
      release.await(60, TimeUnit.SECONDS);
    }, fast()).start()) {
      String eventId = publish(topic, 1).get(0);
      // released once its deadline was pushed back three times: 2.5 ack timeouts past its hand-out
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        JsonNode delivery = gateways.history(consumer, eventId).path("deliveries").path(0);
        return delivery.path("ackDeadline").asLong() >= delivery.path("handedOutAt").asLong() + 12_500;
      });
      release.countDown();
      await().atMost(Duration.ofSeconds(10)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 1);
      assertEquals(1, calls.get());
      assertEquals(0, metadata(consumer).path("totals").path("redelivered").asInt());
      assertEquals(1, gateways.history(consumer, eventId).path("deliveries").size());
      assertTrue(subscriber.stats().extensions() >= 2, subscriber.stats().toString());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("the node a subscriber uses is killed: it resumes on the other node and every event is handled and acked")
  void resumesOnAnotherNode(Transport transport) throws Exception {
    String topic = Gateways.topic("failover");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":5000,\"redelivery\":{\"initialDelayMs\":0}");
    Set<String> handled = ConcurrentHashMap.newKeySet();
    Gateways.Node victim = gateways.addNode();
    HeraldClient twoNodes = HeraldClient.builder().endpoint(victim.url()).endpoint(gateways.url(0)).build();
    try (Subscriber subscriber = transport.subscriber(twoNodes, consumer, delivery -> handled.add(delivery.eventId()),
        fast().withWindow(10)).start()) {
      List<String> first = publish(topic, 50);
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.size() >= 20);
      victim.kill();
      List<String> second = publish(topic, 50);
      await().atMost(Duration.ofSeconds(60)).until(() -> handled.containsAll(first) && handled.containsAll(second));
      await().atMost(Duration.ofSeconds(30)).until(() -> metadata(consumer).path("backlog").asInt() == 0
          && metadata(consumer).path("unacked").asInt() == 0);
      assertTrue(subscriber.stats().connections() >= 2, subscriber.stats().toString());
    } finally {
      twoNodes.close();
    }
  }

  private static void blockByPolling(String consumer) {
    while (gateways.send("POST", "/v1/consumers/" + consumer + "/poll", "{}").statusCode() != 429) {
      // a consumer allowed one poll a second is blocked by the second
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("a blocked consumer (429): the subscriber waits out Retry-After, then takes its events")
  void waitsOutABlock(Transport transport) throws Exception {
    String topic = Gateways.topic("blocked");
    String consumer = gateways.consumer(topic, "\"rateLimit\":{\"tps\":1,\"blockMs\":2000,\"graceMs\":0}");
    blockByPolling(consumer);
    Set<String> handled = ConcurrentHashMap.newKeySet();
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> handled.add(delivery.eventId()), fast()).start()) {
      List<String> published = publish(topic, 3);
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.containsAll(published));
      assertTrue(subscriber.stats().throttled() >= 1, subscriber.stats().toString());
    }
  }

  @org.junit.jupiter.api.Test
  @DisplayName("push: blocked while connected, the subscriber is told (429 notice), dropped, reconnects after the block and goes on")
  void pushSubscriberOutlivesABlock() throws Exception {
    String topic = Gateways.topic("notice");
    String consumer = gateways.consumer(topic, "\"rateLimit\":{\"tps\":1,\"blockMs\":2000,\"graceMs\":0}");
    Set<String> handled = ConcurrentHashMap.newKeySet();
    try (Subscriber subscriber = Transport.PUSH.subscriber(herald, consumer, delivery -> handled.add(delivery.eventId()), fast()).start()) {
      await().atMost(Duration.ofSeconds(10)).until(() -> subscriber.stats().connections() == 1);
      blockByPolling(consumer);
      await().atMost(Duration.ofSeconds(10)).until(() -> subscriber.stats().throttled() >= 1);
      List<String> published = publish(topic, 3);
      await().atMost(Duration.ofSeconds(30)).until(() -> handled.containsAll(published));
      assertTrue(subscriber.stats().connections() >= 2, subscriber.stats().toString());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("beforeAck runs after the handler and before the ack; when it fails the delivery is nacked and handled again")
  void beforeAck(Transport transport) throws Exception {
    String topic = Gateways.topic("persist");
    String consumer = gateways.consumer(topic, "\"redelivery\":{\"initialDelayMs\":0}");
    List<Integer> handled = new CopyOnWriteArrayList<>();
    List<Integer> ackedWhenPersisting = new CopyOnWriteArrayList<>();
    BeforeAck persist = delivery -> {
      ackedWhenPersisting.add(metadata(consumer).path("totals").path("acked").asInt());
      if (delivery.deliveryCount() == 1) {
        throw new IllegalStateException("the database is away");
      }
    };
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> handled.add(delivery.deliveryCount()),
        fast().withBeforeAck(persist)).start()) {
      publish(topic, 1);
      await().atMost(Duration.ofSeconds(30)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 1);
      assertEquals(List.of(1, 2), handled, "work that was not persisted is done again");
      assertEquals(List.of(0, 0), ackedWhenPersisting, "nothing was acked before it was persisted");
      assertEquals(1, subscriber.stats().nacked());
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("ProcessedEvents: a repeat of an event still being handled comes back later, one already processed is acked unhandled")
  void processedEventsSkipRepeats(Transport transport) throws Exception {
    String topic = Gateways.topic("repeats");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":5000,\"redelivery\":{\"initialDelayMs\":0}");
    ProcessedEvents processed = new ProcessedEvents(1000);
    AtomicInteger calls = new AtomicInteger();
    CountDownLatch release = new CountDownLatch(1);
    // no lease extension: the delivery lapses while its handler runs, and the event comes again
    SubscriberSettings settings = fast().withParallelism(2).withMaxLease(Duration.ZERO).withProcessedEvents(processed);
    try (Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> {
      calls.incrementAndGet();
      release.await(60, TimeUnit.SECONDS);
    }, settings).start()) {
      String eventId = publish(topic, 1).get(0);
      await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().nacked() >= 1);
      release.countDown();
      await().atMost(Duration.ofSeconds(30)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 1);
      assertEquals(1, calls.get());
      assertTrue(processed.contains(consumer, eventId));
      assertTrue(gateways.history(consumer, eventId).path("deliveries").size() >= 3, "handed out, lapsed, nacked as busy, acked");
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("close lets the running handler finish and acks it, and nacks what waited for a thread so it comes again at once")
  void closeSettlesEverything(Transport transport) throws Exception {
    String topic = Gateways.topic("close");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":600000");
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Subscriber subscriber = transport.subscriber(herald, consumer, delivery -> {
      running.countDown();
      release.await(30, TimeUnit.SECONDS);
    }, fast().withParallelism(1).withWindow(5)).start();
    publish(topic, 5);
    assertTrue(running.await(30, TimeUnit.SECONDS));
    await().atMost(Duration.ofSeconds(10)).until(() -> subscriber.stats().received() == 5);
    Thread closing = new Thread(subscriber::close);
    closing.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> subscriber.stats().nacked() == 4);
    release.countDown();
    closing.join(30_000);
    assertEquals(1, subscriber.stats().acked());
    List<Integer> again = new CopyOnWriteArrayList<>();
    Subscriber next = transport.subscriber(herald, consumer, delivery -> again.add(delivery.deliveryCount()), fast()).start();
    try {
      // long before their 10 min deadline
      await().atMost(Duration.ofSeconds(10)).until(() -> again.size() == 4);
      assertEquals(List.of(2, 2, 2, 2), again);
    } finally {
      next.close();
    }
    assertEquals(5, metadata(consumer).path("totals").path("acked").asInt());
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("close returns once the gateway has stored the acks, though the node hears them late")
  void closeWaitsForTheAnswers(Transport transport) throws Exception {
    String topic = Gateways.topic("close-acks");
    String consumer = gateways.consumer(topic, "");
    try (SlowProxy proxy = new SlowProxy(gateways.url(0), Duration.ofMillis(300));
        HeraldClient slow = HeraldClient.builder().endpoint(proxy.url()).build()) {
      Subscriber subscriber = transport.subscriber(slow, consumer, delivery -> { }, fast()).start();
      try {
        publish(topic, 3);
        await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().acked() == 3);
      } finally {
        subscriber.close();
      }
      JsonNode metadata = metadata(consumer);
      assertEquals(3, metadata.path("totals").path("acked").asInt());
      assertEquals(0, metadata.path("unacked").asInt());
    }
  }

  @Test
  @DisplayName("push: acks on their way when the socket goes are sent again on the next one, not left to their deadline")
  void acksOutliveTheirSocket() throws Exception {
    String topic = Gateways.topic("lost-acks");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":60000");
    List<String> handled = new CopyOnWriteArrayList<>();
    try (SlowProxy proxy = new SlowProxy(gateways.url(0), Duration.ZERO);
        HeraldClient slow = HeraldClient.builder().endpoint(proxy.url()).build();
        Subscriber subscriber = slow.subscriber(consumer, delivery -> {
          // from now on the proxy keeps what the subscriber sends: its acks
          proxy.pause();
          handled.add(delivery.eventId());
        }, fast()).start()) {
      await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().connections() == 1);
      publish(topic, 3);
      await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().acked() == 3 && proxy.held() > 0);
      proxy.cut();
      await().atMost(Duration.ofSeconds(20)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 3);
      await().atMost(Duration.ofSeconds(20)).until(() -> subscriber.stats().connections() == 2);
      assertEquals(3, handled.size());
    }
  }

  @Test
  @DisplayName("push: close, with the socket gone before its acks were answered, sends them over HTTP")
  void closeSendsLostAcksOverHttp() throws Exception {
    String topic = Gateways.topic("close-lost");
    String consumer = gateways.consumer(topic, "\"ackTimeoutMs\":60000");
    try (SlowProxy proxy = new SlowProxy(gateways.url(0), Duration.ZERO);
        HeraldClient slow = HeraldClient.builder().endpoint(proxy.url()).build()) {
      Subscriber subscriber = slow.subscriber(consumer, delivery -> proxy.pause(),
          fast().withBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10))).start();
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().connections() == 1);
        publish(topic, 3);
        await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().acked() == 3 && proxy.held() > 0);
        proxy.cut();
      } finally {
        // no new socket comes within the close (the reconnect waits 10 s)
        subscriber.close();
      }
      assertEquals(3, metadata(consumer).path("totals").path("acked").asInt());
      assertEquals(1, subscriber.stats().connections());
    }
  }

  @Test
  @DisplayName("push: what a handler finishes while the consumer is blocked (its socket gone) is acked over HTTP at once, not after the block")
  void acksDuringABlock() throws Exception {
    String topic = Gateways.topic("blocked-ack");
    String consumer = gateways.consumer(topic, "\"rateLimit\":{\"tps\":1,\"blockMs\":60000,\"graceMs\":0}");
    CountDownLatch running = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    try (Subscriber subscriber = herald.subscriber(consumer, delivery -> {
      running.countDown();
      release.await(30, TimeUnit.SECONDS);
    }, fast()).start()) {
      await().atMost(Duration.ofSeconds(30)).until(() -> subscriber.stats().connections() == 1);
      publish(topic, 1);
      assertTrue(running.await(30, TimeUnit.SECONDS));
      blockByPolling(consumer);
      await().atMost(Duration.ofSeconds(10)).until(() -> subscriber.stats().throttled() >= 1);
      release.countDown();
      await().atMost(Duration.ofSeconds(10)).until(() -> metadata(consumer).path("totals").path("acked").asInt() == 1);
      assertTrue(metadata(consumer).path("throttle").path("blocked").asBoolean());
    } finally {
      release.countDown();
    }
  }

  @ParameterizedTest
  @EnumSource(Transport.class)
  @DisplayName("a refused subscriber (unknown consumer) stops and says why")
  void refused(Transport transport) {
    Subscriber subscriber = transport.subscriber(herald, "no-such-consumer", delivery -> { }, fast()).start();
    Throwable failure = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
        () -> subscriber.stopped().get(30, TimeUnit.SECONDS));
    assertEquals("NOT_FOUND", assertInstanceOf(HeraldException.class, failure.getCause()).code());
    subscriber.close();
  }
}
