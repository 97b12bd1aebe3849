package io.herald.delivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** ordering: "key" (protocol.md, "Ordering"): one delivered-but-unacked event per key, in arrival order. */
@Timeout(60)
class OrderingIT extends GatewayTest {
  private static final JsonObject ORDERED = new JsonObject().put("ordering", "key").put("maxPollRecords", 1000);

  private static JsonObject keyed(String key, Object payload) {
    return new JsonObject().put("payload", payload).put("key", key);
  }

  private static JsonObject batch(JsonObject... events) {
    return new JsonObject().put("events", new JsonArray(List.of((Object[]) events)));
  }

  private static List<Object> payloads(Reply poll) {
    return poll.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList();
  }

  private static List<Object> payloads(JsonObject frame) {
    return frame.getJsonArray("events").stream().map(e -> ((JsonObject) e).getValue("payload")).toList();
  }

  private static Reply nack(String consumer, List<String> ackIds, JsonObject body) {
    return http().post("/v1/consumers/" + consumer + "/nacks", body.copy().put("ackIds", new JsonArray(ackIds)));
  }

  private static void publish(String topic, JsonObject body) {
    Reply published = http().publish(topic, body);
    assertEquals(200, published.status(), published.body());
  }

  private static void ackAll(String consumer, Reply poll) {
    assertEquals(200, http().ack(consumer, poll.ackIds().toArray(String[]::new)).status());
  }

  /** Whether the event was handed out no earlier than {@code delayMs} after its publish (default ack timeout). */
  private static boolean handedOutAfter(Reply poll, long delayMs) {
    JsonObject event = poll.events().getJsonObject(0);
    return event.getLong("ackDeadline") - 30_000 >= event.getLong("publishedAt") + delayMs;
  }

  /** A poll that waits for events up to 10 s. */
  private static Reply awaitPoll(String consumer, int maxEvents) {
    return nodeB.http().poll(consumer, max(maxEvents).put("waitMs", 10_000));
  }

  @Test
  @DisplayName("one event per key out at a time across nodes, in publish order; unkeyed events are not held; heldBack says ORDERING")
  void oneAtATimePerKey() {
    String topic = unique("order");
    String consumer = consumer(ORDERED, topic);
    // "a" and "ab": one key's line must not take in another whose name begins the same way
    publish(topic, batch(keyed("a", "a1"), keyed("ab", "ab1"), keyed("a", "a2"), event("u1"), keyed("a", "a3"),
        keyed("ab", "ab2"), event("u2")));

    Reply first = http().poll(consumer, max(100));
    assertEquals(List.of("a1", "ab1", "u1", "u2"), payloads(first));
    assertNull(first.json().getString("heldBack"), "it found more than events waiting behind their keys");
    Reply none = nodeB.http().poll(consumer, max(100));
    assertEquals(List.of(), payloads(none), "another node gets nothing while each key's event is out");
    assertEquals("ORDERING", none.json().getString("heldBack"), none.body());

    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(3, metadata.getLong("waitingOnKey"), metadata.encode());
    assertEquals(4, metadata.getLong("unacked"), metadata.encode());

    List<Object> seen = new ArrayList<>(payloads(first));
    List<String> out = first.ackIds();
    while (seen.size() < 7) {
      // acked on the other node: the next of each key goes out
      assertEquals(200, nodeB.http().ack(consumer, out.toArray(String[]::new)).status());
      Reply next = awaitPoll(consumer, 100);
      assertTrue(next.events().size() > 0, next.body());
      Set<Object> keys = new HashSet<>();
      next.events().forEach(e -> assertTrue(keys.add(((JsonObject) e).getValue("key")), "two of one key: " + next.body()));
      seen.addAll(payloads(next));
      out = next.ackIds();
    }
    assertEquals(List.of("a1", "ab1", "u1", "u2", "a2", "ab2", "a3"), seen);
    http().ack(consumer, out.toArray(String[]::new));
    JsonObject drained = http().metadata(consumer).json();
    assertEquals(0, drained.getLong("waitingOnKey"), drained.encode());
    assertEquals(0, drained.getLong("spooledEvents"), drained.encode());
    assertNull(http().poll(consumer, max(100)).json().getString("heldBack"));
  }

  @Test
  @DisplayName("the empty key is no key: its events are not ordered")
  void emptyKeyIsNoKey() {
    String topic = unique("empty");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("", "e1"), keyed("", "e2")));
    assertEquals(List.of("e1", "e2"), payloads(http().poll(consumer, max(10))));
  }

  @Test
  @DisplayName("a slow key holds back no other key: a poll of 100 with 1,000 keys waiting gets 100 events of 100 keys")
  void slowKeyHoldsBackNoOther() {
    String topic = unique("slow");
    String consumer = consumer(ORDERED, topic);
    JsonArray slow = new JsonArray();
    for (int i = 0; i < 500; i++) {
      slow.add(keyed("slow", "slow" + i));
    }
    publish(topic, new JsonObject().put("events", slow));
    assertEquals(List.of("slow0"), payloads(http().poll(consumer, max(100))), "the slow key's first, kept unacked");
    JsonArray others = new JsonArray();
    for (int i = 0; i < 1000; i++) {
      others.add(keyed("k" + i, i));
    }
    publish(topic, new JsonObject().put("events", others));

    Reply poll = nodeB.http().poll(consumer, max(100));
    assertEquals(100, poll.events().size(), poll.body());
    Set<Object> keys = new HashSet<>();
    poll.events().forEach(e -> keys.add(((JsonObject) e).getValue("key")));
    assertEquals(100, keys.size());
    assertTrue(!keys.contains("slow"));
    assertEquals(499, http().metadata(consumer).json().getLong("waitingOnKey"));
  }

  @Test
  @DisplayName("a key whose turn comes goes out by its arrival, ahead of events published after it")
  void turnKeepsArrivalOrder() {
    String topic = unique("turn");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2"), event("u1"), event("u2")));
    Reply first = http().poll(consumer, max(1));
    assertEquals(List.of("a1"), payloads(first));
    ackAll(consumer, first);
    assertEquals(List.of("a2", "u1"), payloads(http().poll(consumer, max(2))));
  }

  @Test
  @DisplayName("a nacked event goes out again before its key's next; past maxDeliveries it is dead-lettered and the key moves on")
  void requeuedEventKeepsItsKey() {
    String topic = unique("requeue");
    String consumer = consumer(ORDERED.copy().put("redelivery", new JsonObject().put("maxDeliveries", 2)), topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2")));
    Reply first = http().poll(consumer, max(10));
    assertEquals(List.of("a1"), payloads(first));
    nack(consumer, first.ackIds(), new JsonObject().put("action", "REQUEUE").put("delayMs", 300));

    Reply again = awaitPoll(consumer, 10);
    assertEquals(List.of("a1"), payloads(again), "the requeued event, not its key's next");
    assertEquals(2, again.events().getJsonObject(0).getInteger("deliveryCount"));
    Reply last = nack(consumer, again.ackIds(), new JsonObject().put("action", "REQUEUE").put("delayMs", 0));
    assertEquals("DEAD_LETTERED", last.results().getJsonObject(0).getString("status"), last.body());
    assertEquals(List.of("a2"), payloads(awaitPoll(consumer, 10)));
  }

  @Test
  @DisplayName("a delivery past its deadline goes out again, keeping its backoff, before any later event of its key")
  void lapsedDeliveryKeepsItsKey() {
    String topic = unique("lapse");
    String consumer = consumer(ORDERED.copy().put("ackTimeoutMs", 5_000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 500)), topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2"), keyed("b", "b1")));
    Reply first = http().poll(consumer, max(10));
    assertEquals(List.of("a1", "b1"), payloads(first));
    long deadline = first.events().getJsonObject(0).getLong("ackDeadline");
    http().ack(consumer, first.ackIds().get(1));

    Reply again = nodeB.http().poll(consumer, max(10).put("waitMs", 15_000));
    assertEquals(List.of("a1"), payloads(again), again.body());
    JsonObject redelivered = again.events().getJsonObject(0);
    assertEquals(2, redelivered.getInteger("deliveryCount"));
    assertTrue(redelivered.getLong("ackDeadline") - 5_000 >= deadline + 500, "handed out again before its backoff ended");
    ackAll(consumer, again);
    assertEquals(List.of("a2"), payloads(awaitPoll(consumer, 10)));
  }

  @Test
  @DisplayName("a rejected event, or one dropped with the error queue off, lets its key's next go")
  void rejectAndDropSettleTheKey() {
    String topic = unique("reject");
    String consumer = consumer(ORDERED, topic);
    String dropping = consumer(ORDERED.copy().put("errorQueue", false), topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2")));
    for (String c : List.of(consumer, dropping)) {
      Reply first = http().poll(c, max(10));
      Reply rejected = nack(c, first.ackIds(), new JsonObject().put("action", "REJECT"));
      assertEquals(c.equals(consumer) ? "REJECTED" : "DROPPED", rejected.results().getJsonObject(0).getString("status"));
      assertEquals(List.of("a2"), payloads(http().poll(c, max(10))), c);
    }
  }

  @Test
  @DisplayName("an event redriven from the error queue takes its place in its key's line again")
  void redrivenEventRejoinsItsKey() {
    String topic = unique("redrive");
    String consumer = consumer(ORDERED, topic);
    // quotes, a backslash and a non-ASCII letter: the key is read back from the stored event
    String key = "he said \"hi\" \\ ü";
    publish(topic, batch(keyed(key, "k1"), keyed(key, "k2")));
    Reply first = http().poll(consumer, max(10));
    String eventId = first.eventIds().get(0);
    nack(consumer, first.ackIds(), new JsonObject().put("action", "REJECT"));
    Reply second = http().poll(consumer, max(10));
    assertEquals(List.of("k2"), payloads(second));

    Reply redriven = http().post("/v1/consumers/" + consumer + "/errors/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(eventId)));
    assertEquals(200, redriven.status(), redriven.body());
    assertEquals(List.of(), payloads(nodeB.http().poll(consumer, max(10))), "k2 is out: k1 waits behind it");
    JsonObject history = http().get("/v1/consumers/" + consumer + "/events/" + eventId).json();
    assertEquals("ORDERING", history.getString("heldBack"), history.encode());
    assertEquals(second.eventIds().get(0), history.getString("waitingBehind"), history.encode());
    ackAll(consumer, second);
    Reply back = awaitPoll(consumer, 10);
    assertEquals(List.of("k1"), payloads(back));
    assertEquals(key, back.events().getJsonObject(0).getString("key"));
  }

  @Test
  @DisplayName("a holder whose TTL ended in the backlog, redriven behind its key's next, is in the backlog, waiting")
  void expiredHolderRedrivenWaits() {
    String topic = unique("expiredholder");
    String consumer = consumer(ORDERED, topic);
    // an event ahead of a1 in the backlog keeps a1's dead pair there (the scheduler drops those at the head)
    publish(topic, event("x0"));
    String first = http().publish(topic, keyed("a", "a1").put("ttlMs", 1000)).results().getJsonObject(0)
        .getString("eventId");
    String next = http().publish(topic, keyed("a", "a2")).results().getJsonObject(0).getString("eventId");
    // a1's TTL ends before anyone polls: it leaves the backlog from its middle (its pair there is
    // dead, and stays until a poll reaches it) and a2 holds the key
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
        .until(() -> http().metadata(consumer).json().getLong("deadLetters") == 1);
    Reply redriven = http().post("/v1/consumers/" + consumer + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(first)));
    assertEquals("REDRIVEN", redriven.json().getJsonArray("results").getJsonObject(0).getString("status"));
    JsonObject history = http().get("/v1/consumers/" + consumer + "/events/" + first).json();
    assertEquals("BACKLOG", history.getString("state"), history.encode());
    assertEquals(next, history.getString("waitingBehind"), history.encode());
    Reply second = nodeB.http().poll(consumer, max(10));
    assertEquals(List.of("x0", "a2"), payloads(second));
    ackAll(consumer, second);
    assertEquals(List.of("a1"), payloads(awaitPoll(consumer, 10)));
  }

  @Test
  @DisplayName("history and metadata say when an event waits behind its key; an event expiring there lets the rest go on")
  void waitingEventsExpire() {
    String topic = unique("ttl");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2").put("ttlMs", 1000), keyed("a", "a3")));
    Reply first = http().poll(consumer, max(10));
    assertEquals(List.of("a1"), payloads(first));
    String waiting = http().publish(topic, keyed("a", "a4")).results().getJsonObject(0).getString("eventId");
    JsonObject history = http().get("/v1/consumers/" + consumer + "/events/" + waiting).json();
    assertEquals("BACKLOG", history.getString("state"), history.encode());
    assertEquals("ORDERING", history.getString("heldBack"), history.encode());
    assertEquals(first.eventIds().get(0), history.getString("waitingBehind"));

    // a2's TTL ends while it waits: dead-lettered by the scheduler, out of the line
    long until = System.currentTimeMillis() + 10_000;
    while (http().metadata(consumer).json().getLong("deadLetters") == 0) {
      assertTrue(System.currentTimeMillis() < until, "a2 not dead-lettered within 10 s");
      assertEquals(List.of(), payloads(http().poll(consumer, max(10).put("waitMs", 500))));
    }
    assertEquals(2, http().metadata(consumer).json().getLong("waitingOnKey"));
    ackAll(consumer, first);
    Reply next = awaitPoll(consumer, 10);
    assertEquals(List.of("a3"), payloads(next));
    JsonObject dead = http().post("/v1/consumers/" + consumer + "/dead-letters/poll", max(10)).json();
    assertEquals("TTL_EXPIRED", dead.getJsonArray("events").getJsonObject(0).getString("deadLetterReason"), dead.encode());
  }

  @Test
  @DisplayName("a delayed event holds its key's later events back until it went out and was settled")
  void delayedEventHoldsItsKey() {
    String topic = unique("delay");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1").put("delayMs", 1500), keyed("a", "a2"), keyed("b", "b1")));
    Reply now = http().poll(consumer, max(10));
    assertEquals(List.of("b1"), payloads(now), "a2 waits behind a1, which waits out its delay");
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(1, metadata.getLong("delayed"), metadata.encode());
    assertEquals(1, metadata.getLong("waitingOnKey"), metadata.encode());

    Reply delayed = awaitPoll(consumer, 10);
    assertEquals(List.of("a1"), payloads(delayed));
    assertTrue(handedOutAfter(delayed, 1500));
    assertEquals(List.of(), payloads(http().poll(consumer, max(10))), "a2 still waits: a1 is out");
    ackAll(consumer, delayed);
    assertEquals(List.of("a2"), payloads(awaitPoll(consumer, 10)));
  }

  @Test
  @DisplayName("a delayed event behind its key waits for both its time and its turn")
  void delayedEventBehindItsKey() {
    String topic = unique("delaybehind");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2").put("delayMs", 1500)));
    Reply first = http().poll(consumer, max(10));
    assertEquals(List.of("a1"), payloads(first));
    ackAll(consumer, first);
    assertEquals(List.of(), payloads(http().poll(consumer, max(10))), "its turn came, its time did not");
    Reply later = awaitPoll(consumer, 10);
    assertEquals(List.of("a2"), payloads(later));
    assertTrue(handedOutAfter(later, 1500));
  }

  @Test
  @DisplayName("auto ack: each hand-out settles its event, the key's next goes with the next poll")
  void autoAck() {
    String topic = unique("auto");
    String consumer = consumer(ORDERED.copy().put("ackMode", "auto"), topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2"), keyed("a", "a3")));
    assertEquals(List.of("a1"), payloads(http().poll(consumer, max(10))));
    assertEquals(List.of("a2"), payloads(http().poll(consumer, max(10))));
    assertEquals(List.of("a3"), payloads(http().poll(consumer, max(10))));
  }

  @Test
  @DisplayName("switched off, the events waiting behind their keys go out, to a parked poll at once; switched on, it orders what is spooled from then on")
  void switchingOrdering() throws Exception {
    String topic = unique("switch");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2"), keyed("a", "a3")));
    assertEquals(List.of("a1"), payloads(http().poll(consumer, max(10))));
    // a long poll parked meanwhile is woken by the switch: the events behind their keys may go
    CompletableFuture<Reply> parked = CompletableFuture.supplyAsync(() ->
        nodeB.http().poll(consumer, new JsonObject().put("maxEvents", 10).put("waitMs", 20_000)));
    await().until(() -> parkedPolls(consumer) == 1);
    JsonObject off = http().get("/v1/admin/consumers/" + consumer).json().put("ordering", "none");
    off.remove("name");
    assertEquals(200, http().putConsumer(consumer, off).status());
    Reply rest = parked.get(10, TimeUnit.SECONDS);
    assertEquals(List.of("a2", "a3"), payloads(rest), "a1 is still out");
    assertEquals(0, http().metadata(consumer).json().getLong("waitingOnKey"));

    // switched on, it holds for what is spooled from then on: c1, spooled before, is in no line,
    // so c2 may go out beside it; b2 waits for b1
    publish(topic, batch(keyed("c", "c1")));
    assertEquals(200, http().putConsumer(consumer, off.put("ordering", "key")).status());
    publish(topic, batch(keyed("b", "b1"), keyed("b", "b2"), keyed("c", "c2")));
    assertEquals(List.of("c1", "b1", "c2"), payloads(awaitPoll(consumer, 10)));
  }

  @Test
  @DisplayName("over WebSockets: socket polls on two nodes get one event per key, and say ORDERING when only waiting ones are left")
  void socketPolls() {
    String topic = unique("wspoll");
    String consumer = consumer(ORDERED, topic);
    publish(topic, batch(keyed("a", "a1"), keyed("a", "a2"), keyed("b", "b1")));
    try (TestSocket first = nodeA.consumerSocket(consumer); TestSocket second = nodeB.consumerSocket(consumer)) {
      first.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
      JsonObject batch = first.next();
      assertEquals(List.of("a1", "b1"), payloads(batch), batch.encode());
      second.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
      JsonObject empty = second.next();
      assertEquals(List.of(), payloads(empty), empty.encode());
      assertEquals("ORDERING", empty.getString("heldBack"), empty.encode());
      first.send(new JsonObject().put("op", "ack").put("batchAckId", batch.getString("batchAckId")));
      assertEquals("ackResult", first.next().getString("type"));
      second.send(new JsonObject().put("op", "poll").put("maxEvents", 10));
      assertEquals(List.of("a2"), payloads(second.next()));
    }
  }

  @Test
  @DisplayName("over WebSockets: publish frames and push follow the key; a closing socket's delivery goes out again first")
  void pushAndDisconnect() {
    String topic = unique("push");
    String consumer = consumer(ORDERED.copy().put("ackTimeoutMs", 600_000).put("redeliverOnDisconnect", true)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    try (TestSocket publisher = TestSocket.connect(nodeA.port(), "/v1/ws/publish")) {
      publisher.send(new JsonObject().put("op", "publish").put("topic", topic).put("requestId", 1)
          .put("events", new JsonArray().add(keyed("a", "a1")).add(keyed("a", "a2")).add(keyed("b", "b1"))));
      assertEquals("publishResult", publisher.next().getString("type"));
    }
    String a1;
    try (TestSocket socket = nodeA.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10));
      assertEquals("subscribed", socket.next().getString("type"));
      List<Object> pushed = new ArrayList<>();
      String b1 = null;
      a1 = null;
      while (pushed.size() < 2) {
        JsonObject frame = socket.next();
        assertEquals("batch", frame.getString("type"), frame.encode());
        for (Object e : frame.getJsonArray("events")) {
          JsonObject event = (JsonObject) e;
          pushed.add(event.getValue("payload"));
          if (event.getValue("payload").equals("b1")) {
            b1 = event.getString("ackId");
          } else {
            a1 = event.getString("eventId");
          }
        }
      }
      assertEquals(Set.of("a1", "b1"), new HashSet<>(pushed));
      assertNull(socket.next(500), "a2 is not pushed while a1 is out");
      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(b1)));
      assertEquals("ackResult", socket.next().getString("type"));
    }
    // the socket closed with a1 unacked: it goes out again, before a2
    try (TestSocket socket = nodeB.consumerSocket(consumer)) {
      socket.send(new JsonObject().put("op", "subscribe").put("window", 10));
      assertEquals("subscribed", socket.next().getString("type"));
      JsonObject again = socket.next();
      assertEquals(List.of("a1"), payloads(again), again.encode());
      JsonObject event = again.getJsonArray("events").getJsonObject(0);
      assertEquals(a1, event.getString("eventId"));
      assertEquals(2, event.getInteger("deliveryCount"));
      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(event.getString("ackId"))));
      JsonObject next = socket.next();
      if ("ackResult".equals(next.getString("type"))) {
        next = socket.next();
      }
      assertNotNull(next);
      assertEquals(List.of("a2"), payloads(next), next.encode());
    }
  }
}
