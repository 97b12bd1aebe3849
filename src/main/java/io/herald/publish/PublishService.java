package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.store.Keys;
import io.herald.store.RedisClock;
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
  private final RedisClock clock;
  private final long maxEventBytes;
  private final EventIds ids = new EventIds();

  public PublishService(RedisStore store, ConsumerDirectory consumers, RedisClock clock, long maxEventBytes) {
    this.store = store;
    this.consumers = consumers;
    this.clock = clock;
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
    List<ConsumerSettings> matched = consumers.matching(topic);
    long publishedAt = ids.stamp(clock.now());

    JsonArray results = new JsonArray();
    List<Object> spool = new ArrayList<>();
    for (int index = 0; index < events.size(); index++) {
      PublishedEvent event = events.get(index);
      JsonObject result = new JsonObject().put("index", index);
      if (event.size() > maxEventBytes) {
        results.add(result.put("status", "REJECTED").put("code", ErrorCode.MESSAGE_TOO_LARGE.name())
            .put("message", "The event is " + event.size() + " bytes; the limit is " + maxEventBytes)
            .put("details", new JsonObject().put("scope", "gateway").put("limit", maxEventBytes)));
        continue;
      }
      String eventId = ids.next(publishedAt);
      results.add(result.put("status", "CONFIRMED").put("eventId", eventId));
      if (event.correlationId() != null) {
        result.put("correlationId", event.correlationId());
      }
      spool.add(eventId);
      spool.add(blob(eventId, topic, event, publishedAt));
    }
    if (spool.isEmpty() || matched.isEmpty()) {
      return Future.succeededFuture(confirmed(results, 0));
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
      int count = (int) writes.stream().filter(Future::result).count();
      return Future.succeededFuture(confirmed(results, count));
    });
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
