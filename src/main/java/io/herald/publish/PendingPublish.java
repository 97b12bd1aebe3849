package io.herald.publish;

import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.quota.SpoolLedger;
import io.herald.topic.TopicSettings;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One publish request on its way through a round: which of its events may be spooled (size,
 * disabled consumers, quotas), for which consumers, and what the publisher is told of each.
 */
final class PendingPublish {
  final TopicSettings topic;
  /** The matching consumers that take new events. */
  final List<ConsumerSettings> matched;
  /** Whether its events count against some quota (then the ledger must admit them). */
  final boolean counted;
  final Promise<JsonObject> promise = Promise.promise();
  private final List<PublishedEvent> events;
  private final long maxEventBytes;
  private final boolean limitedByTopic;
  /** Per event: why it is refused, or null. */
  private final ApiException[] refusals;
  /** Per event: the consumers that skip it. */
  private final List<Set<String>> skipping = new ArrayList<>();
  private final String[] eventIds;
  private final Buffer[] blobs;
  /** The consumers this request's events went to. */
  private final Set<String> targets = new HashSet<>();

  PendingPublish(TopicSettings topic, List<PublishedEvent> events, List<ConsumerSettings> matching,
      long gatewayMaxEventBytes, boolean counted) {
    this.topic = topic;
    this.events = events;
    this.matched = matching.stream().filter(ConsumerSettings::enabled).toList();
    this.counted = counted;
    this.maxEventBytes = topic.maxEventBytes(gatewayMaxEventBytes);
    this.limitedByTopic = maxEventBytes < gatewayMaxEventBytes;
    this.refusals = new ApiException[events.size()];
    this.eventIds = new String[events.size()];
    this.blobs = new Buffer[events.size()];
    ApiException disabled = matching.stream()
        .filter(c -> !c.enabled() && c.admission().rejectPublishWhenRefused())
        .findFirst().map(c -> ApiException.consumerDisabled(c.name())).orElse(null);
    for (int i = 0; i < events.size(); i++) {
      refusals[i] = disabled != null ? disabled : events.get(i).size() > maxEventBytes ? tooLarge(events.get(i)) : null;
      skipping.add(Set.of());
    }
  }

  /** Events that may be spooled as far as can be told before the ledger is asked. */
  int accepted() {
    int accepted = 0;
    for (ApiException refusal : refusals) {
      accepted += refusal == null ? 1 : 0;
    }
    return accepted;
  }

  /** Gives each accepted event its eventId, from {@code sequence} on, and its blob; returns the next sequence. */
  long assign(long publishedAt, long sequence) {
    for (int i = 0; i < events.size(); i++) {
      if (refusals[i] == null) {
        eventIds[i] = EventBlobs.eventId(publishedAt, sequence++);
        blobs[i] = EventBlobs.blob(eventIds[i], topic.name(), events.get(i), publishedAt);
      }
    }
    return sequence;
  }

  /** What the ledger must judge: the sizes of the accepted events. */
  SpoolLedger.Group group() {
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < events.size(); i++) {
      if (refusals[i] == null) {
        sizes.add(blobs[i].length());
      }
    }
    return new SpoolLedger.Group(topic, matched, sizes);
  }

  /** Takes the ledger's verdicts on the accepted events, in order, from {@code from}; returns the next index. */
  int judged(List<SpoolLedger.Verdict> verdicts, int from) {
    for (int i = 0; i < events.size(); i++) {
      if (refusals[i] == null) {
        SpoolLedger.Verdict verdict = verdicts.get(from++);
        refusals[i] = verdict.refusal();
        skipping.set(i, verdict.skipping());
      }
    }
    return from;
  }

  /** The consumers that skip some of its events for want of room, and how many each skips. */
  Map<String, Integer> skipped() {
    Map<String, Integer> skipped = new HashMap<>();
    skipping.forEach(names -> names.forEach(name -> skipped.merge(name, 1, Integer::sum)));
    return skipped;
  }

  /** Adds the (eventId, blob, ttlMs, charged topic) of every admitted event to each consumer's spool. */
  void addTo(Map<String, List<Object>> spools) {
    String charged = topic.quotaBytes() == null ? "" : topic.name();
    for (int i = 0; i < events.size(); i++) {
      if (refusals[i] != null) {
        continue;
      }
      PublishedEvent event = events.get(i);
      for (ConsumerSettings consumer : matched) {
        if (skipping.get(i).contains(consumer.name())) {
          continue;
        }
        targets.add(consumer.name());
        List<Object> spool = spools.computeIfAbsent(consumer.name(), c -> new ArrayList<>());
        spool.add(eventIds[i]);
        spool.add(blobs[i]);
        spool.add(event.ttlMs() == null ? "" : event.ttlMs());
        spool.add(charged);
      }
    }
  }

  /** Fails the request (nothing of it was written). */
  void fail(Throwable failure) {
    promise.tryFail(ApiException.from(failure, false));
  }

  /**
   * Answers once every consumer this request's events went to took them (false: deleted
   * meanwhile); fails when a write failed, saying whether some other one succeeded.
   */
  void finish(Map<String, Future<Boolean>> writes) {
    List<Future<Boolean>> mine = targets.stream().map(writes::get).toList();
    Future<Boolean> failed = mine.stream().filter(Future::failed).findFirst().orElse(null);
    if (failed != null) {
      ApiException failure = ApiException.from(failed.cause(), true);
      promise.tryFail(mine.stream().anyMatch(Future::succeeded) && failure.code() == ErrorCode.STORE_UNAVAILABLE
          ? new ApiException(ErrorCode.OUTCOME_UNKNOWN,
              "Redis failed part-way: the events were stored for some consumers only; publish again")
          : failure);
      return;
    }
    JsonArray results = new JsonArray();
    for (int i = 0; i < events.size(); i++) {
      JsonObject result = new JsonObject().put("index", i);
      results.add(result);
      if (refusals[i] != null) {
        JsonObject error = refusals[i].toJson().getJsonObject("error");
        result.put("status", "REJECTED").put("code", error.getString("code"))
            .put("message", error.getString("message")).put("details", error.getJsonObject("details"));
        continue;
      }
      int took = 0;
      for (ConsumerSettings consumer : matched) {
        Future<Boolean> write = writes.get(consumer.name());
        took += !skipping.get(i).contains(consumer.name()) && write != null && write.result() ? 1 : 0;
      }
      result.put("status", "CONFIRMED").put("eventId", eventIds[i]).put("matched", took);
      if (events.get(i).correlationId() != null) {
        result.put("correlationId", events.get(i).correlationId());
      }
    }
    promise.tryComplete(new JsonObject().put("results", results));
  }

  private ApiException tooLarge(PublishedEvent event) {
    JsonObject details = new JsonObject().put("scope", limitedByTopic ? "topic" : "gateway").put("limit", maxEventBytes);
    if (limitedByTopic) {
      details.put("topic", topic.name());
    }
    return new ApiException(ErrorCode.MESSAGE_TOO_LARGE,
        "The event is " + event.size() + " bytes; the limit is " + maxEventBytes, details);
  }
}
