package io.herald.hardening;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.Http;
import io.herald.testing.LoggedErrors;
import io.herald.testing.TestNode;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSocket;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Throws 10,000 random and mutated requests at the gateway — publish bodies, consumer operations
 * (poll, acks, nacks, extend, queues), administration, consumer and publishing socket frames — and
 * checks that each gets the protocol's answer: no 5xx (Redis is up throughout, so not even
 * STORE_UNAVAILABLE), every error in the envelope, no exception escaping a handler or logged as
 * an error, and nothing stored or acked by a request that was refused.
 */
class RandomRequestsPropertiesIT {
  private static final String TOPIC_PREFIX = "fuzz/";
  private static final List<String> FIELDS = List.of("payload", "events", "key", "headers", "ttlMs", "correlationId",
      "idempotencyKey", "maxEvents", "ackIds", "batchAckIds", "action", "delayMs", "reason", "extendMs", "eventIds",
      "all", "topics", "ackMode", "ackTimeoutMs", "maxPollRecords", "maxBatchBytes", "maxUnacked", "retentionMs", "redelivery",
      "rateLimit", "enabled", "quotaBytes", "quotaEvents", "namespace", "maxEventBytes", "op", "requestId", "window",
      "topic", "batchAckId", "maxDeliveries", "tps");
  private static final List<String> CONSUMER_ROUTES = List.of("poll", "acks", "nacks", "extend", "dead-letters/poll",
      "dead-letters/acks", "dead-letters/redrive", "errors/poll", "errors/acks", "errors/redrive");

  private static TestRedis redis;
  private static TestNode node;
  private static Http http;
  private static LoggedErrors errorsLogged;
  /** Events confirmed for the fuzz consumer (its share of `matched`), duplicates aside. */
  private static final AtomicLong confirmed = new AtomicLong();
  /** Events acked by answers that said ACKED. */
  private static final AtomicLong acked = new AtomicLong();
  /** Real ackIds handed out, for acks and nacks that name something that exists. */
  private static final List<String> ackIds = new CopyOnWriteArrayList<>();
  private static TestSocket consumerSocket;
  private static TestSocket publishSocket;
  private static int marker;

  @BeforeContainer
  static void start() {
    errorsLogged = LoggedErrors.watch();
    redis = TestRedis.start();
    node = TestNode.start(redis);
    http = node.http();
    Http.Reply created = http.putConsumer("fuzz", new JsonObject().put("topics", new JsonArray().add(TOPIC_PREFIX + ">"))
        .put("maxPollRecords", 100).put("maxUnacked", 100_000).put("rateLimit", new JsonObject().put("tps", 100_000)));
    assertEquals(201, created.status(), created.body());
    consumerSocket = TestSocket.connect(node.port(), "/v1/consumers/fuzz/ws");
    publishSocket = TestSocket.connect(node.port(), "/v1/ws/publish");
  }

  @AfterContainer
  static void stop() {
    try {
      JsonObject totals = http.metadata("fuzz").json().getJsonObject("totals");
      assertEquals(confirmed.get(), totals.getLong("published"), "events stored = events confirmed");
      assertEquals(acked.get(), totals.getLong("acked"), "events acked = ACKED answers");
      assertEquals(List.of(), node.uncaught(), "exceptions that escaped a handler");
      assertEquals(List.of(), errorsLogged.messages());
    } finally {
      consumerSocket.close();
      publishSocket.close();
      errorsLogged.close();
      node.close();
      redis.close();
    }
  }

  // --- properties: 4 × 2,500 tries

  @Property(tries = 2500)
  void publishBodies(@ForAll("topics") String topic, @ForAll("publishBodies") byte[] body) {
    Http.Reply reply = http.sendBytes("POST", "/v1/topics/" + topic + "/events", body);
    checkAnswer(reply);
    if (reply.status() == 200) {
      countConfirmed(reply.json().getJsonArray("results"));
    }
  }

  @Property(tries = 2500)
  void consumerOperations(@ForAll("consumerRoutes") String route, @ForAll("consumerBodies") byte[] body) {
    Http.Reply reply = http.sendBytes("POST", "/v1/consumers/fuzz/" + route, body);
    checkAnswer(reply);
    if (reply.status() != 200) {
      return;
    }
    JsonObject answer = reply.json();
    if (route.equals("poll")) {
      answer.getJsonArray("events").forEach(e -> ackIds.add(((JsonObject) e).getString("ackId")));
    } else if (route.equals("acks")) {
      answer.getJsonArray("results").forEach(r -> acked.addAndGet("ACKED".equals(((JsonObject) r).getString("status")) ? 1 : 0));
    }
  }

  @Property(tries = 2500)
  void administration(@ForAll("adminPaths") String path, @ForAll("adminBodies") byte[] body) {
    Http.Reply before = http.get(path);
    Http.Reply reply = http.sendBytes("PUT", path, body);
    checkAnswer(reply);
    if (reply.status() >= 400) {
      Http.Reply after = http.get(path);
      assertEquals(before.status(), after.status(), "a refused PUT changes nothing");
      assertEquals(before.body(), after.body(), "a refused PUT changes nothing");
    } else if (path.startsWith("/v1/admin/consumers/")) {
      // the consumer may now take fuzz topics: keep it out of the count
      http.delete(path);
    }
  }

  @Property(tries = 2500)
  void socketFrames(@ForAll("frames") byte[] frame, @ForAll boolean toPublisher) {
    String text = new String(frame, StandardCharsets.UTF_8);
    String requestId = "marker-" + (++marker);
    if (toPublisher) {
      publishSocket.sendText(text);
      publishSocket.send(new JsonObject().put("op", "publish").put("topic", "elsewhere").put("requestId", requestId)
          .put("events", new JsonArray().add(new JsonObject().put("payload", 1))));
      drainUntil(publishSocket, requestId);
    } else {
      consumerSocket.sendText(text);
      consumerSocket.send(new JsonObject().put("op", "ping").put("requestId", requestId));
      drainUntil(consumerSocket, requestId);
    }
  }

  // --- checks

  private static void checkAnswer(Http.Reply reply) {
    int status = reply.status();
    assertTrue(status < 500, "no 5xx with Redis up: " + status + " " + reply.body());
    JsonObject body = reply.json();
    if (status >= 400) {
      JsonObject error = body.getJsonObject("error");
      assertNotNull(error, reply.body());
      assertNotNull(error.getString("code"), reply.body());
      assertNotNull(error.getString("message"), reply.body());
    }
  }

  /** The fuzz consumer is the only one outside a fuzzed PUT, so `matched` is its count. */
  private static void countConfirmed(JsonArray results) {
    for (Object result : results) {
      JsonObject r = (JsonObject) result;
      if ("CONFIRMED".equals(r.getString("status")) && !r.getBoolean("duplicate", false)) {
        confirmed.addAndGet(r.getInteger("matched"));
      }
    }
  }

  /**
   * Reads a socket's answers up to the one of {@code requestId}: each must be a protocol frame, an
   * error one below 500; pushed batches (a random frame may subscribe) are collected for acks.
   */
  private static void drainUntil(TestSocket socket, String requestId) {
    while (true) {
      JsonObject frame = socket.next();
      assertNotNull(frame.getString("type"), frame.encode());
      if ("error".equals(frame.getString("type"))) {
        assertTrue(frame.getInteger("status") < 500, frame.encode());
        assertNotNull(frame.getString("code"), frame.encode());
      } else if ("batch".equals(frame.getString("type"))) {
        frame.getJsonArray("events").forEach(e -> ackIds.add(((JsonObject) e).getString("ackId")));
      } else if ("ackResult".equals(frame.getString("type"))) {
        frame.getJsonArray("results").forEach(r -> acked.addAndGet("ACKED".equals(((JsonObject) r).getString("status")) ? 1 : 0));
      } else if ("publishResult".equals(frame.getString("type"))) {
        countConfirmed(frame.getJsonArray("results"));
      }
      if (requestId.equals(frame.getValue("requestId"))) {
        assertFalse(socket.isClosed());
        return;
      }
    }
  }

  // --- generators

  @Provide
  Arbitrary<String> topics() {
    return Arbitraries.oneOf(
        Arbitraries.of("fuzz/a", "fuzz/b/c", "other/x", "$sys/alerts/x", "a//b", "a/b*c", "%00", "fuzz/" + "l".repeat(251)),
        // characters a URI path may carry as they are; others are percent-encoded
        Arbitraries.strings().withChars("abc/._-*$%20").ofMinLength(1).ofMaxLength(40)
            .filter(t -> !t.startsWith("/") && !t.matches(".*%(?![0-9A-Fa-f]{2}).*")));
  }

  @Provide
  Arbitrary<String> consumerRoutes() {
    return Arbitraries.of(CONSUMER_ROUTES);
  }

  @Provide
  Arbitrary<String> adminPaths() {
    // not the fuzz consumer itself: its settings (ackMode auto acks on hand-out) would blur the counts
    return Arbitraries.of("/v1/admin/consumers/fuzz-admin", "/v1/admin/topics/fuzz/a", "/v1/admin/topics/other/x");
  }

  @Provide
  Arbitrary<byte[]> publishBodies() {
    return bodies(List.of(
        "{\"payload\":{\"n\":1,\"s\":\"x\"}}",
        "{\"events\":[{\"payload\":1,\"key\":\"k\",\"headers\":{\"h\":\"v\"}},{\"payload\":null,\"ttlMs\":60000}]}",
        "{\"payload\":[1,2,3],\"correlationId\":\"c\",\"idempotencyKey\":\"i\"}"));
  }

  @Provide
  Arbitrary<byte[]> consumerBodies() {
    Arbitrary<byte[]> withRealAckIds = Arbitraries.integers().between(0, 3).map(n -> {
      JsonArray ids = new JsonArray();
      for (int i = 0; i < n && !ackIds.isEmpty(); i++) {
        ids.add(ackIds.remove(ackIds.size() - 1));
      }
      return new JsonObject().put("ackIds", ids).encode().getBytes(StandardCharsets.UTF_8);
    });
    return Arbitraries.frequencyOf(
        Tuple.of(3, bodies(List.of("{\"maxEvents\":5}", "{\"ackIds\":[\"a.1.1.ff\"]}",
            "{\"ackIds\":[],\"action\":\"REQUEUE\",\"delayMs\":0,\"reason\":\"r\"}", "{\"ackIds\":[\"x\"],\"extendMs\":5000}",
            "{\"eventIds\":[\"e\"]}", "{\"all\":true}", "{\"batchAckIds\":[\"00\"]}"))),
        Tuple.of(1, withRealAckIds));
  }

  @Provide
  Arbitrary<byte[]> adminBodies() {
    return bodies(List.of(
        "{\"topics\":[\"elsewhere/>\"],\"ackTimeoutMs\":5000,\"redelivery\":{\"maxDeliveries\":3}}",
        "{\"topics\":[\"fuzz/>\"],\"maxPollRecords\":100,\"maxUnacked\":100000,\"rateLimit\":{\"tps\":100000}}",
        "{\"maxEventBytes\":1024,\"quotaBytes\":1000000,\"enabled\":true,\"namespace\":\"ns\"}"));
  }

  @Provide
  Arbitrary<byte[]> frames() {
    return bodies(List.of(
        "{\"op\":\"poll\",\"maxEvents\":2,\"requestId\":1}",
        "{\"op\":\"ack\",\"ackIds\":[\"a\"],\"requestId\":\"r\"}",
        "{\"op\":\"publish\",\"topic\":\"elsewhere/x\",\"events\":[{\"payload\":1}],\"requestId\":\"p\"}",
        "{\"op\":\"nack\",\"ackIds\":[\"a\"],\"action\":\"REJECT\"}",
        "{\"op\":\"extend\",\"ackIds\":[\"a\"],\"extendMs\":5000}",
        "{\"op\":\"ping\"}"));
  }

  /** Random JSON documents, valid seeds mutated at the byte level, and documents nested too deep. */
  private static Arbitrary<byte[]> bodies(List<String> seeds) {
    Arbitrary<byte[]> randomJson = json(4).map(value -> encode(value).getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> mutated = Combinators.combine(Arbitraries.of(seeds), mutations()).as((seed, mutate) -> mutate.apply(seed));
    Arbitrary<byte[]> deep = Arbitraries.integers().between(60, 3000).map(depth ->
        ("{\"payload\":" + "[".repeat(depth) + "]".repeat(depth) + "}").getBytes(StandardCharsets.UTF_8));
    Arbitrary<byte[]> seedsAsIs = Arbitraries.of(seeds).map(s -> s.getBytes(StandardCharsets.UTF_8));
    return Arbitraries.frequencyOf(
        Tuple.of(4, randomJson), Tuple.of(6, mutated),
        Tuple.of(1, deep), Tuple.of(1, seedsAsIs));
  }

  /** Byte-level mutations of a seed: flips, cuts, insertions of random or structural bytes, repeats. */
  private static Arbitrary<Function<String, byte[]>> mutations() {
    Arbitrary<Integer> position = Arbitraries.integers().between(0, 1000);
    Arbitrary<byte[]> junk = Arbitraries.oneOf(
        Arbitraries.bytes().array(byte[].class).ofMinSize(1).ofMaxSize(8),
        Arbitraries.of("{", "}", "[", "]", "\"", ":", ",", "\\", "null", "1e999999", "-0", "\uD800", "\u0000",
            "99999999999999999999999999", "\"payload\":", "true").map(s -> s.getBytes(StandardCharsets.UTF_8)));
    return Combinators.combine(Arbitraries.integers().between(0, 4), position, position, junk).as((kind, at, length, bytes) ->
        seed -> {
          byte[] original = seed.getBytes(StandardCharsets.UTF_8);
          int i = at % (original.length + 1);
          int j = Math.min(original.length, i + length % 16);
          List<Byte> out = new ArrayList<>();
          for (byte b : original) {
            out.add(b);
          }
          switch (kind) {
            case 0 -> { // flip one byte
              if (i < original.length) {
                out.set(i, (byte) (original[i] ^ (1 << (length % 8))));
              }
            }
            case 1 -> out.subList(i, j).clear(); // cut
            case 2 -> { // insert
              for (int k = bytes.length - 1; k >= 0; k--) {
                out.add(i, bytes[k]);
              }
            }
            case 3 -> out.subList(0, Math.min(out.size(), i)).clear(); // truncate the start
            default -> out.addAll(i, new ArrayList<>(out.subList(i, j))); // repeat a stretch
          }
          byte[] result = new byte[out.size()];
          for (int k = 0; k < result.length; k++) {
            result[k] = out.get(k);
          }
          return result;
        });
  }

  /** Random JSON values up to {@code depth} deep, objects keyed mostly by the protocol's field names. */
  private static Arbitrary<Object> json(int depth) {
    Arbitrary<Object> scalar = Arbitraries.oneOf(
        Arbitraries.just(null), Arbitraries.of(true, false),
        Arbitraries.longs(), Arbitraries.integers().between(-2, 100_000).map(i -> (Object) i),
        Arbitraries.doubles(), Arbitraries.strings().ofMaxLength(40),
        Arbitraries.strings().withChars("ab.").ofMinLength(300).ofMaxLength(2000),
        Arbitraries.of("REQUEUE", "REJECT", "explicit", "auto", "fuzz/>", "ping", "poll", "ack", "subscribe", "publish"));
    if (depth == 0) {
      return scalar;
    }
    Arbitrary<String> key = Arbitraries.oneOf(Arbitraries.of(FIELDS), Arbitraries.strings().ofMaxLength(10));
    Arbitrary<Object> array = json(depth - 1).list().ofMaxSize(5).map(JsonArray::new);
    Arbitrary<Object> object = Arbitraries.maps(key, json(depth - 1)).ofMaxSize(6).map(m -> new JsonObject(new LinkedHashMap<>(m)));
    return Arbitraries.frequencyOf(Tuple.of(3, scalar), Tuple.of(1, array), Tuple.of(3, object));
  }

  private static String encode(Object value) {
    return Json.encode(value);
  }
}
