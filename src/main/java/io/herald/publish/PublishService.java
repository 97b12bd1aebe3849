package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicName;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Publishes events: spools each one for every matching consumer with one script call per consumer
 * (all sent at once), and confirms only when every one of those calls succeeded.
 */
public final class PublishService {
  private final RedisStore store;
  private final ConsumerDirectory consumers;
  private final long maxEventBytes;

  public PublishService(RedisStore store, ConsumerDirectory consumers, long maxEventBytes) {
    this.store = store;
    this.consumers = consumers;
    this.maxEventBytes = maxEventBytes;
  }

  /** Publishes a request body to {@code topic}; the result is the protocol's {@code results} body. */
  public Future<JsonObject> publish(String topic, Buffer body) {
    if (TopicName.isSystem(topic)) {
      return Future.failedFuture(new ApiException(ErrorCode.PUBLISH_ACL_DENIED,
          "Topics under $sys/ are the gateway's own", new JsonObject().put("topic", topic)));
    }
    String problem = TopicName.problem(topic);
    if (problem != null) {
      return Future.failedFuture(ApiException.invalid("topic", problem));
    }
    List<PublishedEvent> events = EventParser.parse(body);
    long accepted = events.stream().filter(e -> e.size() <= maxEventBytes).count();
    if (accepted == 0) {
      return Future.succeededFuture(confirmed(spool(topic, events, 0, 0, new ArrayList<>()), 0));
    }
    return store.eval(Script.EVENT_IDS, List.of(Keys.EVENT_ID_CLOCK), List.of(accepted))
        .recover(failure -> Future.failedFuture(ApiException.from(failure, false)))
        .compose(ids -> {
          List<Object> spool = new ArrayList<>();
          JsonArray results = spool(topic, events, ids.get(0).toLong(), ids.get(1).toLong(), spool);
          return store(consumers.matching(topic), spool).map(matched -> confirmed(results, matched));
        });
  }

  /**
   * Gives each event within the size limit its eventId and adds (eventId, blob) pairs to {@code spool};
   * returns the per-event results, oversized events refused.
   */
  private JsonArray spool(String topic, List<PublishedEvent> events, long publishedAt, long firstSequence,
      List<Object> spool) {
    JsonArray results = new JsonArray();
    long sequence = firstSequence;
    for (int index = 0; index < events.size(); index++) {
      PublishedEvent event = events.get(index);
      JsonObject result = new JsonObject().put("index", index);
      if (event.size() > maxEventBytes) {
        results.add(result.put("status", "REJECTED").put("code", ErrorCode.MESSAGE_TOO_LARGE.name())
            .put("message", "The event is " + event.size() + " bytes; the limit is " + maxEventBytes)
            .put("details", new JsonObject().put("scope", "gateway").put("limit", maxEventBytes)));
        continue;
      }
      String eventId = eventId(publishedAt, sequence++);
      results.add(result.put("status", "CONFIRMED").put("eventId", eventId));
      if (event.correlationId() != null) {
        result.put("correlationId", event.correlationId());
      }
      spool.add(eventId);
      spool.add(blob(eventId, topic, event, publishedAt));
    }
    return results;
  }

  /** Spools the events for every matching consumer; the result is how many consumers took them. */
  private Future<Integer> store(List<ConsumerSettings> matched, List<Object> spool) {
    if (matched.isEmpty()) {
      return Future.succeededFuture(0);
    }

    List<Future<Boolean>> writes = new ArrayList<>(matched.size());
    for (ConsumerSettings consumer : matched) {
      List<Object> args = new ArrayList<>(spool.size() + 2);
      args.add(consumer.name());
      args.add(Keys.WAKE_CHANNEL);
      args.addAll(spool);
      writes.add(store.eval(Script.PUBLISH, Keys.consumer(consumer.name()), args)
          .map(spooled -> spooled.toLong() >= 0));
    }
    return Future.join(writes).transform(done -> {
      if (done.failed()) {
        boolean anyWritten = writes.stream().anyMatch(Future::succeeded);
        Throwable cause = writes.stream().filter(Future::failed).findFirst().orElseThrow().cause();
        ApiException failure = ApiException.from(cause, true);
        return Future.failedFuture(anyWritten && failure.code() == ErrorCode.STORE_UNAVAILABLE
            ? new ApiException(ErrorCode.OUTCOME_UNKNOWN,
                "Redis failed part-way: the events were stored for some consumers only; publish again")
            : failure);
      }
      return Future.succeededFuture((int) writes.stream().filter(Future::result).count());
    });
  }

  /**
   * 12 hex digits of the publish time in ms, then 16 of the gateway-wide sequence: plain-text order
   * is publish order, and the scripts read the publish time back from the first 12 digits.
   */
  static String eventId(long publishedAt, long sequence) {
    return hex(publishedAt, 12) + "-" + hex(sequence, 16);
  }

  private static String hex(long value, int digits) {
    String text = Long.toHexString(value);
    return "0".repeat(Math.max(0, digits - text.length())) + text;
  }

  private static JsonObject confirmed(JsonArray results, int matched) {
    for (int i = 0; i < results.size(); i++) {
      JsonObject result = results.getJsonObject(i);
      if ("CONFIRMED".equals(result.getString("status"))) {
        result.put("matched", matched);
      }
    }
    return new JsonObject().put("results", results);
  }

  /** The event's members as delivered, with the payload spliced in as the publisher sent it. */
  private static Buffer blob(String eventId, String topic, PublishedEvent event, long publishedAt) {
    Buffer blob = Buffer.buffer(event.payload().length() + 160);
    blob.appendString("\"eventId\":\"").appendString(eventId)
        .appendString("\",\"topic\":\"").appendString(topic)
        .appendString("\",\"key\":").appendString(event.key() == null ? "null" : Json.encode(event.key()))
        .appendString(",\"headers\":").appendString(headers(event.headers()))
        .appendString(",\"payload\":").appendBuffer(event.payload())
        .appendString(",\"publishedAt\":").appendString(Long.toString(publishedAt));
    return blob;
  }

  private static String headers(Map<String, String> headers) {
    return headers.isEmpty() ? "{}" : new JsonObject(new java.util.LinkedHashMap<>(headers)).encode();
  }

}
