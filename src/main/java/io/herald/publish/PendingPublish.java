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
import java.util.Arrays;
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
  /** The accepted events with an idempotency key, claimed before spooling. */
  private final List<Integer> keyed = new ArrayList<>();
  /** Per event: true when it repeats an earlier publish (answered with {@code duplicate: true}). */
  private final boolean[] duplicates;
  /** Per event: the consumers that took it, when an earlier publish stored it; else -1. */
  private final int[] storedMatched;
  /** Per event: the event of this round it repeats, or null. */
  private final Repeat[] repeats;
  /** Per event: how many consumers took it, once finished. */
  private final int[] matchedCounts;

  /** An event of this round that another one repeats (same topic and idempotencyKey). */
  private record Repeat(PendingPublish publish, int index) {}

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
    this.duplicates = new boolean[events.size()];
    this.storedMatched = new int[events.size()];
    this.repeats = new Repeat[events.size()];
    this.matchedCounts = new int[events.size()];
    Arrays.fill(storedMatched, -1);
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
        if (events.get(i).idempotencyKey() != null) {
          keyed.add(i);
        }
      }
    }
    return sequence;
  }

  /** The accepted events with an idempotency key. */
  List<Integer> keyed() {
    return keyed;
  }

  String eventId(int index) {
    return eventIds[index];
  }

  String idempotencyKey(int index) {
    return events.get(index).idempotencyKey();
  }

  /** The event repeats one an earlier publish stored for {@code matched} consumers: nothing to spool. */
  void storedBefore(int index, String eventId, int matched) {
    eventIds[index] = eventId;
    duplicates[index] = true;
    storedMatched[index] = matched;
  }

  /** The event repeats an event of this round: it shares that one's outcome. */
  void sameAs(int index, PendingPublish publish, int other) {
    duplicates[index] = true;
    repeats[index] = new Repeat(publish, other);
  }

  /**
   * The event repeats one whose outcome is not known: it is spooled again under that eventId (a
   * consumer that had it already takes nothing: publish.lua remembers keyed eventIds for the
   * window), with that one's publish time.
   */
  void respool(int index, String eventId) {
    eventIds[index] = eventId;
    duplicates[index] = true;
    blobs[index] = EventBlobs.blob(eventId, topic.name(), events.get(index), EventBlobs.publishedAt(eventId));
  }

  /** For a claimed event, what {@code idem_settle.lua} records: consumers that took it, '-' if refused; else null. */
  String claimOutcome(int index) {
    if (storedMatched[index] >= 0 || repeats[index] != null) {
      return null;
    }
    if (refusals[index] != null) {
      // a claim of its own is dropped; one it inherited from a publish of unknown outcome stays
      return duplicates[index] ? null : "-";
    }
    return Integer.toString(matchedCounts[index]);
  }

  /** Whether the event goes to the consumers' spools in this round. */
  private boolean spooling(int index) {
    return refusals[index] == null && storedMatched[index] < 0 && repeats[index] == null;
  }

  /** What the ledger must judge: the sizes of the events to spool. */
  SpoolLedger.Group group() {
    List<Integer> sizes = new ArrayList<>();
    for (int i = 0; i < events.size(); i++) {
      if (spooling(i)) {
        sizes.add(blobs[i].length());
      }
    }
    return new SpoolLedger.Group(topic, matched, sizes);
  }

  /** Takes the ledger's verdicts on the events to spool, in order, from {@code from}; returns the next index. */
  int judged(List<SpoolLedger.Verdict> verdicts, int from) {
    for (int i = 0; i < events.size(); i++) {
      if (spooling(i)) {
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

  /**
   * Adds the (eventId, blob, ttlMs, charged topic, 'K' for an idempotencyKey) of every admitted
   * event to each consumer's spool.
   */
  void addTo(Map<String, List<Object>> spools) {
    String charged = topic.quotaBytes() == null ? "" : topic.name();
    for (int i = 0; i < events.size(); i++) {
      if (!spooling(i)) {
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
        spool.add(event.idempotencyKey() == null ? "" : "K");
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
    for (int i = 0; i < events.size(); i++) {
      matchedCounts[i] = spooling(i) ? took(i, writes) : 0;
    }
    JsonArray results = new JsonArray();
    for (int i = 0; i < events.size(); i++) {
      results.add(result(i));
    }
    promise.tryComplete(new JsonObject().put("results", results));
  }

  private int took(int index, Map<String, Future<Boolean>> writes) {
    int took = 0;
    for (ConsumerSettings consumer : matched) {
      Future<Boolean> write = writes.get(consumer.name());
      took += !skipping.get(index).contains(consumer.name()) && write != null && write.result() ? 1 : 0;
    }
    return took;
  }

  /** The event's publish result; one that repeats another of this round gets that one's outcome. */
  private JsonObject result(int index) {
    if (repeats[index] != null) {
      JsonObject first = repeats[index].publish().result(repeats[index].index()).put("index", index);
      first.remove("correlationId");
      if ("CONFIRMED".equals(first.getString("status"))) {
        first.put("duplicate", true);
        if (events.get(index).correlationId() != null) {
          first.put("correlationId", events.get(index).correlationId());
        }
      }
      return first;
    }
    JsonObject result = new JsonObject().put("index", index);
    if (refusals[index] != null) {
      JsonObject error = refusals[index].toJson().getJsonObject("error");
      return result.put("status", "REJECTED").put("code", error.getString("code"))
          .put("message", error.getString("message")).put("details", error.getJsonObject("details"));
    }
    result.put("status", "CONFIRMED").put("eventId", eventIds[index])
        .put("matched", storedMatched[index] >= 0 ? storedMatched[index] : matchedCounts[index]);
    if (duplicates[index]) {
      result.put("duplicate", true);
    }
    if (events.get(index).correlationId() != null) {
      result.put("correlationId", events.get(index).correlationId());
    }
    return result;
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
