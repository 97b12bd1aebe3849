package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicDirectory;
import io.herald.topic.TopicName;
import io.herald.topic.TopicSettings;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.ResponseType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Publishes events: spools each one for every matching consumer and confirms only when every one
 * of those writes succeeded.
 *
 * <p>Publish requests that arrive together on this verticle's event loop are written together: one
 * eventId reservation for all of them, then one spool script per matching consumer carrying the
 * events of every request that matched it, all sent at once. Under load a round trip carries many
 * requests; alone, a request goes out on the next turn of the loop. Event-loop confined.
 */
public final class PublishService {
  private static final System.Logger LOG = System.getLogger(PublishService.class.getName());
  /** Most events written in one round of calls; a larger gathering is split. */
  static final int MAX_EVENTS_PER_ROUND = 1000;

  private final Context context;
  private final RedisStore store;
  private final ConsumerDirectory consumers;
  private final TopicDirectory topics;
  private final long maxEventBytes;
  private final DueTimes dueTimes;
  private List<Publish> gathering = new ArrayList<>();
  private int gatheredEvents;

  /** @param dueTimes told when events with a time to live must expire */
  public PublishService(Context context, RedisStore store, ConsumerDirectory consumers, TopicDirectory topics,
      long maxEventBytes, DueTimes dueTimes) {
    this.context = context;
    this.store = store;
    this.consumers = consumers;
    this.topics = topics;
    this.maxEventBytes = maxEventBytes;
    this.dueTimes = dueTimes;
  }

  /** Publishes a request body to {@code topic}; the result is the protocol's {@code results} body. */
  public Future<JsonObject> publish(String topic, Buffer body) {
    checkTopic(topic);
    return publish(topic, EventParser.parse(body));
  }

  /** Publishes parsed events (e.g. of a WebSocket frame) to {@code topic}. */
  public Future<JsonObject> publish(String topic, PublishRequest request) {
    checkTopic(topic);
    return publish(topic, request.events());
  }

  private static void checkTopic(String topic) {
    if (TopicName.isSystem(topic)) {
      throw new ApiException(ErrorCode.PUBLISH_ACL_DENIED, "Topics under $sys/ are the gateway's own",
          new JsonObject().put("topic", topic));
    }
    String problem = TopicName.problem(topic);
    if (problem != null) {
      throw ApiException.invalid("topic", problem);
    }
  }

  private Future<JsonObject> publish(String topic, List<PublishedEvent> events) {
    TopicSettings settings = topics.get(topic);
    if (!settings.enabled()) {
      throw new ApiException(ErrorCode.TOPIC_DISABLED, "Topic '" + topic + "' is disabled",
          new JsonObject().put("topic", topic));
    }
    Publish publish = new Publish(topic, events, consumers.matching(topic), settings.maxEventBytes(maxEventBytes));
    if (publish.accepted == 0) {
      publish.assign(0, 0, new LinkedHashMap<>());
      publish.promise.complete(publish.confirmed(0));
      return publish.promise.future();
    }
    if (gatheredEvents + publish.accepted > MAX_EVENTS_PER_ROUND) {
      write(takeGathering());
    }
    if (gathering.isEmpty()) {
      // requests already queued on this event loop join this round before it is written
      context.runOnContext(v -> write(takeGathering()));
    }
    gathering.add(publish);
    gatheredEvents += publish.accepted;
    return publish.promise.future();
  }

  private List<Publish> takeGathering() {
    List<Publish> round = gathering;
    gathering = new ArrayList<>();
    gatheredEvents = 0;
    return round;
  }

  /** Reserves eventIds for the whole round, then spools it: one script call per matching consumer. */
  private void write(List<Publish> round) {
    if (round.isEmpty()) {
      return;
    }
    int total = round.stream().mapToInt(p -> p.accepted).sum();
    store.eval(Script.EVENT_IDS, List.of(Keys.EVENT_ID_CLOCK), List.of(total))
        .onFailure(failure -> round.forEach(p -> p.promise.tryFail(ApiException.from(failure, false))))
        .onSuccess(ids -> {
          long publishedAt = ids.get(0).toLong();
          long sequence = ids.get(1).toLong();
          Map<String, List<Object>> spools = new LinkedHashMap<>();
          for (Publish publish : round) {
            sequence = publish.assign(publishedAt, sequence, spools);
          }
          Map<String, Future<Boolean>> writes = new LinkedHashMap<>();
          spools.forEach((consumer, pairs) -> {
            writes.put(consumer, store.eval(Script.PUBLISH, Keys.consumer(consumer), pairs).map(reply -> {
              if (reply.type() != ResponseType.MULTI) {
                return false; // the consumer was deleted meanwhile
              }
              dueTimes.file(consumer, reply.get(1).toLong(), publishedAt);
              return true;
            }));
          });
          Future.join(new ArrayList<>(writes.values()))
              .onComplete(done -> round.forEach(publish -> publish.finish(writes)));
        });
  }

  /** One publish request on its way through a round. */
  private final class Publish {
    private final String topic;
    private final List<PublishedEvent> events;
    /** The matching consumers that take new events. */
    private final List<ConsumerSettings> matched;
    /** Why every event is refused (a matching consumer is disabled and refuses for all), or null. */
    private final JsonObject refusal;
    private final long maxEventBytes;
    private final int accepted;
    private final Promise<JsonObject> promise = Promise.promise();
    private final JsonArray results = new JsonArray();

    Publish(String topic, List<PublishedEvent> events, List<ConsumerSettings> matching, long maxEventBytes) {
      this.topic = topic;
      this.events = events;
      this.matched = matching.stream().filter(ConsumerSettings::enabled).toList();
      this.refusal = matching.stream()
          .filter(c -> !c.enabled() && c.admission().rejectPublishWhenRefused())
          .findFirst().map(c -> refused(ApiException.consumerDisabled(c.name()))).orElse(null);
      this.maxEventBytes = maxEventBytes;
      this.accepted = refusal != null ? 0 : (int) events.stream().filter(e -> e.size() <= maxEventBytes).count();
      matching.stream().filter(c -> !c.enabled() && !c.admission().rejectPublishWhenRefused())
          .forEach(c -> discarded(c.name(), events.size()));
    }

    /**
     * Gives each event that may be spooled its eventId, from {@code sequence} on, and adds the
     * (eventId, blob, ttlMs) triples to the spool of every matching consumer; refuses the others.
     * Returns the next free sequence number.
     */
    long assign(long publishedAt, long sequence, Map<String, List<Object>> spools) {
      for (int index = 0; index < events.size(); index++) {
        PublishedEvent event = events.get(index);
        JsonObject result = new JsonObject().put("index", index);
        results.add(result);
        if (refusal != null) {
          result.mergeIn(refusal);
          continue;
        }
        if (event.size() > maxEventBytes) {
          result.mergeIn(refused(tooLarge(event)));
          continue;
        }
        String eventId = eventId(publishedAt, sequence++);
        result.put("status", "CONFIRMED").put("eventId", eventId);
        if (event.correlationId() != null) {
          result.put("correlationId", event.correlationId());
        }
        Buffer blob = blob(eventId, topic, event, publishedAt);
        for (ConsumerSettings consumer : matched) {
          List<Object> spool = spools.computeIfAbsent(consumer.name(), c -> new ArrayList<>());
          spool.add(eventId);
          spool.add(blob);
          spool.add(event.ttlMs() == null ? "" : event.ttlMs());
        }
      }
      return sequence;
    }

    private ApiException tooLarge(PublishedEvent event) {
      boolean topicLimit = maxEventBytes < PublishService.this.maxEventBytes;
      JsonObject details = new JsonObject().put("scope", topicLimit ? "topic" : "gateway").put("limit", maxEventBytes);
      if (topicLimit) {
        details.put("topic", topic);
      }
      return new ApiException(ErrorCode.MESSAGE_TOO_LARGE,
          "The event is " + event.size() + " bytes; the limit is " + maxEventBytes, details);
    }

    /** Confirms once every consumer this request matched took its events; fails otherwise. */
    void finish(Map<String, Future<Boolean>> writes) {
      List<Future<Boolean>> mine = matched.stream().map(c -> writes.get(c.name())).toList();
      Future<Boolean> failed = mine.stream().filter(Future::failed).findFirst().orElse(null);
      if (failed == null) {
        promise.tryComplete(confirmed((int) mine.stream().filter(Future::result).count()));
        return;
      }
      ApiException failure = ApiException.from(failed.cause(), true);
      promise.tryFail(mine.stream().anyMatch(Future::succeeded) && failure.code() == ErrorCode.STORE_UNAVAILABLE
          ? new ApiException(ErrorCode.OUTCOME_UNKNOWN,
              "Redis failed part-way: the events were stored for some consumers only; publish again")
          : failure);
    }

    JsonObject confirmed(int matchedCount) {
      for (int i = 0; i < results.size(); i++) {
        JsonObject result = results.getJsonObject(i);
        if ("CONFIRMED".equals(result.getString("status"))) {
          result.put("matched", matchedCount);
        }
      }
      return new JsonObject().put("results", results);
    }
  }

  /** A publish result's members for an event refused with {@code reason}. */
  private static JsonObject refused(ApiException reason) {
    JsonObject error = reason.toJson().getJsonObject("error");
    return new JsonObject().put("status", "REJECTED").put("code", error.getString("code"))
        .put("message", error.getString("message")).put("details", error.getJsonObject("details"));
  }

  /** Counts events a disabled consumer skipped (it lets its publishers through); a count, so best effort. */
  private void discarded(String consumer, int events) {
    store.send(Request.cmd(Command.HINCRBY).arg(Keys.consumer(consumer).get(0)).arg("discarded").arg(events))
        .onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Could not count discarded events: " + failure.getMessage()));
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
    return headers.isEmpty() ? "{}" : new JsonObject(new LinkedHashMap<>(headers)).encode();
  }
}
