package io.herald.publish;

import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.quota.SpoolLedger;
import io.herald.store.StoreException;
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
import java.util.stream.IntStream;

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
  /** False for the gateway's own events, which no quota refuses. */
  private final boolean quotasHold;
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
  /** Per event: why a consumer's spool script refused it for all (its settings changed), or null. */
  private final ApiException[] refusedInSpool;
  /** Per event: the consumers whose spool script refused it for their own quota. */
  private final List<Set<String>> overQuotaIn = new ArrayList<>();
  /** Per event: the consumers that hold it although over their own quota (see {@link #spooledBeyondQuota}). */
  private final List<Set<String>> beyondQuota = new ArrayList<>();
  /** Per event: the consumers that took it, and no longer hold it (taken back, then disabled). */
  private final List<Set<String>> notHeld = new ArrayList<>();

  /** An event of this round that another one repeats (same topic and idempotencyKey). */
  private record Repeat(PendingPublish publish, int index) {}

  /**
   * @param counted     whether the ledger must admit its events (a quota spanning consumers applies)
   * @param quotasHold  false for the gateway's own events, which no quota refuses
   */
  PendingPublish(TopicSettings topic, List<PublishedEvent> events, List<ConsumerSettings> matching,
      long gatewayMaxEventBytes, boolean counted, boolean quotasHold) {
    this.topic = topic;
    this.quotasHold = quotasHold;
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
    this.refusedInSpool = new ApiException[events.size()];
    Arrays.fill(storedMatched, -1);
    ApiException disabled = matching.stream()
        .filter(c -> !c.enabled() && c.admission().rejectPublishWhenRefused())
        .findFirst().map(c -> ApiException.consumerDisabled(c.name())).orElse(null);
    for (int i = 0; i < events.size(); i++) {
      refusals[i] = disabled != null ? disabled : events.get(i).size() > maxEventBytes ? tooLarge(events.get(i)) : null;
      skipping.add(Set.of());
      overQuotaIn.add(new HashSet<>());
      beyondQuota.add(new HashSet<>());
      notHeld.add(new HashSet<>());
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

  /** The payload sizes of the accepted events, in order: what their copies' blocks are cut by. */
  IntStream acceptedPayloadSizes() {
    return IntStream.range(0, events.size()).filter(i -> refusals[i] == null)
        .map(i -> events.get(i).payload().length());
  }

  /** Gives each accepted event its eventId, the next of {@code blocks}, and its blob. */
  void assign(long publishedAt, CopyBlocks blocks) {
    for (int i = 0; i < events.size(); i++) {
      if (refusals[i] == null) {
        eventIds[i] = EventBlobs.eventId(publishedAt, blocks.next(events.get(i).payload().length()));
        blobs[i] = EventBlobs.blob(eventIds[i], topic.name(), events.get(i), publishedAt);
        if (events.get(i).idempotencyKey() != null) {
          keyed.add(i);
        }
      }
    }
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

  /**
   * The consumers whose own quota may refuse its events for every consumer: each must hold room for
   * them (own_hold.lua) before any spool call takes them.
   */
  List<ConsumerSettings> ownQuotaRefusers() {
    if (ownQuotaRefusers == null) {
      ownQuotaRefusers = !quotasHold ? List.of() : matched.stream().filter(c -> c.admission().rejectPublishWhenRefused()
          && (c.admission().quotaBytes() != null || c.admission().quotaEvents() != null)).toList();
    }
    return ownQuotaRefusers;
  }

  private List<ConsumerSettings> ownQuotaRefusers;

  /**
   * The indexes and sizes of the events an own quota must hold room for, in order: those to spool,
   * but for repeats of a publish whose outcome is unknown (a consumer that took them takes nothing
   * again, and one that refuses them fails the request with OUTCOME_UNKNOWN: see refusedInSpool).
   */
  List<int[]> heldSizes() {
    List<int[]> sizes = new ArrayList<>();
    for (int i = 0; i < events.size(); i++) {
      if (spooling(i) && !duplicates[i]) {
        sizes.add(new int[] {i, blobs[i].length()});
      }
    }
    return sizes;
  }

  /** The event is refused to the publisher, for every consumer: nothing of it is spooled. */
  void refuse(int index, ApiException refusal) {
    if (spooling(index)) {
      refusals[index] = refusal;
    }
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
   * Adds the (eventId, blob, ttlMs, charged topic, flags, deliverAt) of every admitted event to each
   * consumer's spool.
   */
  void addTo(Map<String, List<Object>> spools) {
    for (int i = 0; i < events.size(); i++) {
      if (!spooling(i)) {
        continue;
      }
      for (ConsumerSettings consumer : matched) {
        if (skipping.get(i).contains(consumer.name())) {
          continue;
        }
        targets.add(consumer.name());
        addEvent(spools.computeIfAbsent(consumer.name(), c -> new ArrayList<>()), i, false);
      }
    }
  }

  private void addEvent(List<Object> spool, int index, boolean beyondQuota) {
    PublishedEvent event = events.get(index);
    spool.add(eventIds[index]);
    spool.add(blobs[index]);
    spool.add(event.ttlMs() == null ? "" : event.ttlMs());
    spool.add(topic.quotaBytes() == null ? "" : topic.name());
    // flags of publish.lua: K an idempotencyKey, F free of the consumer's own quotas
    spool.add((event.idempotencyKey() == null ? "" : "K") + (quotasHold && !beyondQuota ? "" : "F"));
    spool.add(event.delay() == null ? "" : event.delay().deliverAt(EventBlobs.publishedAt(eventIds[index])));
    spool.add(event.key() == null ? "" : event.key());
  }

  /**
   * Fails the request: nothing of it was spooled, but an idempotency claim that too few replicas
   * took stands on the primary (a retry finds it): that outcome is unknown.
   */
  void fail(Throwable failure) {
    promise.tryFail(ApiException.from(failure, StoreException.unreplicated(failure)));
  }

  /**
   * Finds the events a consumer refused for every consumer in its spool script (disabled, or over
   * its own quota, after this node read its settings), and adds, per consumer that took such an
   * event, its eventId to {@code takeBack}. A repeat of a publish of unknown outcome is not taken
   * back: its first publish, maybe still on its way, may have stored it or be taking it back itself;
   * refused in a spool script, such a repeat fails with OUTCOME_UNKNOWN (its claim stays, so a later
   * retry learns how the first ended).
   */
  void refusedInSpool(Map<String, Future<SpoolReply>> writes, Map<String, Set<String>> takeBack) {
    for (int i = 0; i < events.size(); i++) {
      if (!spooling(i)) {
        continue;
      }
      if (duplicates[i]) {
        for (ConsumerSettings consumer : matched) {
          SpoolReply reply = reply(writes, consumer, i);
          if (reply != null && reply.refuses(eventIds[i])) {
            fail(new ApiException(ErrorCode.OUTCOME_UNKNOWN, "The first publish of this idempotencyKey has not"
                + " ended yet and a consumer refuses the event now: publish again later"));
          }
        }
        continue;
      }
      for (ConsumerSettings consumer : matched) {
        SpoolReply reply = reply(writes, consumer, i);
        if (reply != null && reply.refuses(eventIds[i])) {
          if (refusedInSpool[i] == null) {
            refusedInSpool[i] = reply.disabled() ? ApiException.consumerDisabled(consumer.name())
                : ApiException.overOwnQuota(consumer.name());
          }
          if (!reply.disabled()) {
            overQuotaIn.get(i).add(consumer.name());
          }
        }
      }
      if (refusedInSpool[i] != null) {
        for (ConsumerSettings consumer : matched) {
          SpoolReply reply = reply(writes, consumer, i);
          if (reply != null && reply.holds(eventIds[i])) {
            takeBack.computeIfAbsent(consumer.name(), c -> new HashSet<>()).add(eventIds[i]);
          }
        }
      }
    }
  }

  /**
   * The events refused in a spool script are refused to the publisher, unless some consumer
   * handed one out before it could be taken back ({@code kept}): that one is stored again where it
   * was taken back, and confirmed for those that hold it.
   */
  void tookBack(Set<String> kept) {
    for (int i = 0; i < events.size(); i++) {
      if (refusedInSpool[i] != null && !kept.contains(eventIds[i])) {
        refusals[i] = refusedInSpool[i];
      }
    }
  }

  /**
   * The consumers that refused {@code eventId} for their own quota in their spool call: when another
   * consumer handed it out before it could be taken back, these take it all the same (beyond their
   * quota), so that a confirmed event is held by every enabled consumer that refuses for all.
   */
  Set<String> overQuotaIn(String eventId) {
    int index = spoolingIndex(eventId);
    return index < 0 ? Set.of() : overQuotaIn.get(index);
  }

  /** {@code consumer} holds {@code eventId} beyond its own quota (a spool call with flag F). */
  void spooledBeyondQuota(String consumer, String eventId) {
    int index = spoolingIndex(eventId);
    if (index >= 0) {
      beyondQuota.get(index).add(consumer);
    }
  }

  /** {@code consumer} took {@code eventId} and no longer holds it: it is not counted in {@code matched}. */
  void notHeldBy(String consumer, String eventId) {
    int index = spoolingIndex(eventId);
    if (index >= 0) {
      notHeld.get(index).add(consumer);
    }
  }

  /** Adds to {@code into} the eventIds it spools again: repeats of publishes whose outcome was not known. */
  void addRespooled(Set<String> into) {
    for (int i = 0; i < events.size(); i++) {
      if (duplicates[i] && spooling(i)) {
        into.add(eventIds[i]);
      }
    }
  }

  /** The index of the event this request spools as {@code eventId}, or -1. */
  private int spoolingIndex(String eventId) {
    for (int i = 0; i < events.size(); i++) {
      if (eventId.equals(eventIds[i]) && spooling(i)) {
        return i;
      }
    }
    return -1;
  }

  /** The spool reply of a consumer this event went to, if its write succeeded; else null. */
  private SpoolReply reply(Map<String, Future<SpoolReply>> writes, ConsumerSettings consumer, int index) {
    Future<SpoolReply> write = writes.get(consumer.name());
    return write == null || !write.succeeded() || skipping.get(index).contains(consumer.name()) ? null : write.result();
  }

  /** The (eventId, blob, ttlMs, charged topic, flags, deliverAt, key) this request sent with {@code eventId}, if any. */
  List<Object> spooled(String eventId) {
    return spooled(eventId, false);
  }

  /** As {@link #spooled(String)}; {@code beyondQuota}: flagged F, free of the consumer's own quota. */
  List<Object> spooled(String eventId, boolean beyondQuota) {
    int index = spoolingIndex(eventId);
    if (index >= 0) {
      List<Object> event = new ArrayList<>();
      addEvent(event, index, beyondQuota);
      return event;
    }
    return null;
  }

  /**
   * Answers once every consumer this request's events went to took them (or was deleted
   * meanwhile); fails when a write failed, saying whether some other one succeeded.
   */
  void finish(Map<String, Future<SpoolReply>> writes) {
    List<Future<SpoolReply>> mine = targets.stream().map(writes::get).toList();
    Future<SpoolReply> failed = mine.stream().filter(Future::failed).findFirst().orElse(null);
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

  private int took(int index, Map<String, Future<SpoolReply>> writes) {
    int took = 0;
    for (ConsumerSettings consumer : matched) {
      SpoolReply reply = reply(writes, consumer, index);
      boolean holds = reply != null && reply.holds(eventIds[index]) && !notHeld.get(index).contains(consumer.name());
      took += holds || beyondQuota.get(index).contains(consumer.name()) ? 1 : 0;
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
