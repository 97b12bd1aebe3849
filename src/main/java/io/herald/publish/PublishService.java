package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.copy.Copies;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.protocol.TopicName;
import io.herald.lifecycle.Drain;
import io.herald.metrics.HeraldMetrics;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolFigures;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.store.StoreException;
import io.herald.topic.TopicDirectory;
import io.herald.topic.TopicSettings;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.ResponseType;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Publishes events: spools each one for every matching consumer and confirms only when every one
 * of those writes succeeded.
 *
 * <p>Publish requests that arrive together on this verticle's event loop are written together: one
 * eventId reservation for all of them, one ledger call admitting those that count against a quota,
 * then one spool script per matching consumer carrying the events of every request that matched
 * it, all sent at once. Under load a round trip carries many requests; alone, a request goes out on
 * the next turn of the loop. Event-loop confined.
 */
public final class PublishService {
  private static final System.Logger LOG = System.getLogger(PublishService.class.getName());
  private static final SecureRandom RANDOM = new SecureRandom();
  /** Most events written in one round of calls; a larger gathering is split. */
  static final int MAX_EVENTS_PER_ROUND = 1000;

  private final Vertx vertx;
  private final RedisStore store;
  private final ConsumerDirectory consumers;
  private final TopicDirectory topics;
  private final SpoolLedger ledger;
  private final long maxEventBytes;
  private final DueTimes dueTimes;
  private final Idempotency idempotency;
  private final long idempotencyWindowMs;
  private final HoldSettler settler;
  private final Drain drain;
  private final HeraldMetrics metrics;
  private final EventIds eventIds;
  private final OwnQuotaHolds ownQuotaHolds;
  private final Copies copies;
  private List<PendingPublish> gathering = new ArrayList<>();
  private int gatheredEvents;

  /**
   * @param dueTimes            told when events with a time to live must expire
   * @param settler             gives the ledger holds of publish rounds back
   * @param idempotencyWindowMs how long a topic remembers an idempotencyKey
   * @param drain               refuses clients' publishes once the node drains, and waits for them
   * @param metrics             counts publishes by outcome and times them
   * @param copies              the node's stored copies of events, and the layout they are spooled in
   */
  public PublishService(Vertx vertx, RedisStore store, ConsumerDirectory consumers, TopicDirectory topics,
      SpoolLedger ledger, HoldSettler settler, long maxEventBytes, DueTimes dueTimes, long idempotencyWindowMs,
      EventIds eventIds, Drain drain, HeraldMetrics metrics, Copies copies) {
    this.vertx = vertx;
    this.copies = copies;
    this.metrics = metrics;
    this.drain = drain;
    this.eventIds = eventIds;
    this.store = store;
    this.consumers = consumers;
    this.topics = topics;
    this.ledger = ledger;
    this.settler = settler;
    this.maxEventBytes = maxEventBytes;
    this.dueTimes = dueTimes;
    this.idempotency = new Idempotency(store, idempotencyWindowMs);
    this.idempotencyWindowMs = idempotencyWindowMs;
    this.ownQuotaHolds = new OwnQuotaHolds(store);
  }

  /** Publishes a request body to {@code topic}; the result is the protocol's {@code results} body. */
  public Future<JsonObject> publish(String topic, Buffer body) {
    return measured(() -> {
      checkTopic(topic);
      return admitted(() -> publish(topic, EventParser.parse(body), true));
    });
  }

  /** Publishes parsed events (e.g. of a WebSocket frame) to {@code topic}. */
  public Future<JsonObject> publish(String topic, PublishRequest request) {
    return measured(() -> {
      checkTopic(topic);
      return admitted(() -> publish(topic, request.events(), true));
    });
  }

  /**
   * A client's publish, counted by outcome: each event confirmed or refused with its code, or the
   * request once with the code it was refused with as a whole; answered ones are timed.
   */
  private Future<JsonObject> measured(Supplier<Future<JsonObject>> publish) {
    long start = System.nanoTime();
    Future<JsonObject> answer;
    try {
      answer = publish.get();
    } catch (RuntimeException e) {
      metrics.published(ApiException.from(e, false).code().name(), 1);
      throw e;
    }
    return answer.onComplete(done -> {
      if (done.failed()) {
        metrics.published(ApiException.from(done.cause(), false).code().name(), 1);
        return;
      }
      metrics.confirmed(System.nanoTime() - start);
      JsonArray results = done.result().getJsonArray("results");
      int confirmed = 0;
      int duplicates = 0;
      for (int i = 0; i < results.size(); i++) {
        JsonObject result = results.getJsonObject(i);
        if (!"CONFIRMED".equals(result.getString("status"))) {
          metrics.published(result.getString("code", result.getString("status")), 1);
        } else if (result.getBoolean("duplicate", false)) {
          duplicates++;
        } else {
          confirmed++;
        }
      }
      if (confirmed > 0) {
        metrics.published("confirmed", confirmed);
      }
      if (duplicates > 0) {
        metrics.published("duplicate", duplicates);
      }
    });
  }

  /** A client's publish: refused once the node drains, else counted until answered (the drain waits for it). */
  private Future<JsonObject> admitted(Supplier<Future<JsonObject>> publish) {
    drain.enter();
    try {
      return publish.get().onComplete(done -> drain.leave());
    } catch (RuntimeException e) {
      drain.leave();
      throw e;
    }
  }

  /**
   * Publishes one of the gateway's own events on a {@code $sys/} topic. Quotas do not hold it back:
   * an alert that the spool is full must get through.
   */
  public Future<JsonObject> publishSystem(String topic, JsonObject payload) {
    Buffer json = payload.toBuffer();
    return publish(topic, List.of(new PublishedEvent(json, null, Map.of(), null, null, null, null, json.length())), false);
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

  private Future<JsonObject> publish(String topic, List<PublishedEvent> events, boolean quotasHold) {
    TopicSettings settings = topics.get(topic);
    if (!settings.enabled()) {
      throw new ApiException(ErrorCode.TOPIC_DISABLED, "Topic '" + topic + "' is disabled",
          new JsonObject().put("topic", topic));
    }
    List<ConsumerSettings> matching = consumers.matching(topic);
    matching.stream().filter(c -> !c.enabled() && !c.admission().rejectPublishWhenRefused())
        .forEach(c -> discarded(c.name(), events.size()));
    PendingPublish publish = new PendingPublish(settings, events, matching, maxEventBytes,
        quotasHold && ledger.applies(settings, matching), quotasHold);
    int accepted = publish.accepted();
    if (accepted == 0) {
      publish.finish(Map.of());
      return publish.promise.future();
    }
    if (gatheredEvents + accepted > MAX_EVENTS_PER_ROUND) {
      write(takeGathering());
    }
    if (gathering.isEmpty()) {
      // requests already queued on this event loop join this round before it is written
      // on this event loop (its publishes always come on it): the current context's next turn
      vertx.runOnContext(v -> write(takeGathering()));
    }
    gathering.add(publish);
    gatheredEvents += accepted;
    return publish.promise.future();
  }

  private List<PendingPublish> takeGathering() {
    List<PendingPublish> round = gathering;
    gathering = new ArrayList<>();
    gatheredEvents = 0;
    return round;
  }

  /**
   * Reserves eventIds for the whole round, claims idempotency keys, holds room in the own quotas of
   * the consumers that refuse for all, has the ledger admit what counts against a quota, then spools.
   */
  private void write(List<PendingPublish> round) {
    if (round.isEmpty()) {
      return;
    }
    int[] payloadSizes = round.stream().flatMapToInt(PendingPublish::acceptedPayloadSizes).toArray();
    eventIds.reserve(store, CopyBlocks.count(payloadSizes))
        .compose(ids -> {
          CopyBlocks blocks = new CopyBlocks(ids[1]);
          for (PendingPublish publish : round) {
            publish.assign(ids[0], blocks);
          }
          return idempotency.claim(round);
        })
        .onFailure(failure -> round.forEach(p -> p.fail(failure)))
        .onSuccess(claimed -> {
          // requests whose claims failed are answered already
          List<PendingPublish> going = round.stream().anyMatch(p -> p.promise.future().isComplete())
              ? round.stream().filter(p -> !p.promise.future().isComplete()).toList() : round;
          if (going.isEmpty()) {
            return;
          }
          if (!ownQuotaHolds.needed(going)) {
            admit(going, OwnHold.NONE);
            return;
          }
          String ownHoldId = randomHoldId();
          ownQuotaHolds.hold(going, ownHoldId)
              .onFailure(failure -> going.forEach(p -> p.fail(failure)))
              .onSuccess(holding -> admit(going, new OwnHold(ownHoldId, holding)));
        });
  }

  /** The room held in own quotas for a round: its id, and the consumers holding it. */
  private record OwnHold(String id, Set<String> consumers) {
    /** A round that matches no consumer refusing for all with an own quota holds nothing. */
    static final OwnHold NONE = new OwnHold("", Set.of());
  }

  private static String randomHoldId() {
    byte[] hold = new byte[12];
    RANDOM.nextBytes(hold);
    return HexFormat.of().formatHex(hold);
  }

  private void admit(List<PendingPublish> round, OwnHold ownHold) {
    List<PendingPublish> counted = round.stream().filter(p -> p.counted).toList();
    if (counted.isEmpty()) {
      spool(round, null, List.of(), ownHold);
      return;
    }
    String holdId = randomHoldId();
    List<SpoolLedger.Group> groups = counted.stream().map(PendingPublish::group).toList();
    // every consumer the ledger may hold room for, spooled or not (its shard may have held room for
    // an event another shard refused), so that every hold is given back at once
    Set<String> holds = new LinkedHashSet<>();
    groups.forEach(group -> group.consumers().forEach(consumer -> holds.add(holdId + ":" + consumer.name())));
    ledger.reserve(store, holdId, groups)
        .onFailure(failure -> {
          round.forEach(p -> p.fail(failure));
          settler.settle(List.copyOf(holds), List.of());
          ownQuotaHolds.release(ownHold.consumers(), ownHold.id());
        })
        .onSuccess(verdicts -> {
          int next = 0;
          for (PendingPublish publish : counted) {
            next = publish.judged(verdicts, next);
            publish.skipped().forEach(this::discarded);
          }
          spool(round, holdId, List.copyOf(holds), ownHold);
        });
  }

  /**
   * One spool script per consumer, each realizing its part of the ledger's hold (if any); then the
   * hold is given back with the consumers' figures, which now include what it stood for.
   */
  private void spool(List<PendingPublish> round, String holdId, List<String> holds, OwnHold ownHold) {
    Map<String, List<Object>> spools = new LinkedHashMap<>();
    round.forEach(publish -> publish.addTo(spools));
    ownQuotaHolds.release(ownHold.consumers().stream().filter(consumer -> !spools.containsKey(consumer))
        .collect(java.util.stream.Collectors.toSet()), ownHold.id());
    if (!copies.shared()) {
      spoolCalls(round, holdId, holds, ownHold, spools, Map.of());
      return;
    }
    // a set, not a scan of the round per event: rounds of a thousand one-event requests are common
    Set<String> respooled = new HashSet<>();
    round.forEach(publish -> publish.addRespooled(respooled));
    RoundCopies.write(copies, store, consumers, spools, respooled::contains)
        .onFailure(failure -> {
          round.forEach(p -> p.fail(failure));
          if (StoreException.unreplicated(failure)) {
            // the copies are on the primary, unconfirmed by its replicas: the round is spooled as a
            // spool call unconfirmed by them is (held there, answered 503 all the same)
            spoolCalls(round, holdId, holds, ownHold, spools, Map.of());
            return;
          }
          // no consumer took anything: what the round held is given back
          if (holdId != null) {
            settler.settle(holds, List.of());
          }
          ownQuotaHolds.release(ownHold.consumers(), ownHold.id());
        })
        .onSuccess(copiesKept -> spoolCalls(round, holdId, holds, ownHold, spools, copiesKept));
  }

  /** {@code copiesKept}: the retention each copy the calls' stubs name is kept for (none inline). */
  private void spoolCalls(List<PendingPublish> round, String holdId, List<String> holds, OwnHold ownHold,
      Map<String, List<Object>> spools, Map<String, Long> copiesKept) {
    Map<String, Future<SpoolReply>> writes = new LinkedHashMap<>();
    List<SpoolFigures> figures = new ArrayList<>();
    spools.forEach((consumer, events) -> {
      String hold = holdId == null ? "" : holdId + ":" + consumer;
      List<Object> args = new ArrayList<>(List.of(hold, idempotencyWindowMs,
          ownHold.consumers().contains(consumer) ? ownHold.id() : ""));
      args.addAll(events);
      writes.put(consumer, store.eval(Script.PUBLISH, Keys.spool(consumer), args)
          .onFailure(failure -> fileWritten(consumer, failure))
          .compose(reply -> {
            SpoolReply spooled = SpoolReply.parse(reply);
            if (spooled.took()) {
              dueTimes.file(consumer, reply.get(1).toLong());
              if (holdId != null) {
                figures.add(SpoolFigures.parse(consumer, consumers.get(consumer), reply, spooled.figuresFrom()));
              }
            }
            return keptLongEnough(consumer, events, copiesKept, spooled).map(spooled);
          }));
    });
    Future.join(new ArrayList<>(writes.values())).onComplete(done -> {
      Map<String, Set<String>> takeBack = new LinkedHashMap<>();
      round.forEach(publish -> publish.refusedInSpool(writes, takeBack));
      takeBack(round, takeBack).onSuccess(kept -> {
        round.forEach(publish -> publish.tookBack(kept));
        round.forEach(publish -> publish.finish(writes));
        idempotency.settle(round);
        if (holdId != null) {
          settler.settle(holds, figures);
        }
      });
    });
  }

  /**
   * Takes back from the consumers that took them the events another consumer refused for all in
   * its spool script (its settings changed after this node read them), so that the publisher is
   * refused with nothing stored. An event some consumer handed out before it could be taken back
   * stays: it is stored again where it was taken back and confirmed; a request whose events could
   * not be put back fails with OUTCOME_UNKNOWN. Answers the events kept; never fails.
   */
  private Future<Set<String>> takeBack(List<PendingPublish> round, Map<String, Set<String>> takeBack) {
    if (takeBack.isEmpty()) {
      return Future.succeededFuture(Set.of());
    }
    Map<String, List<String>> takenFrom = new LinkedHashMap<>();
    Set<String> kept = new HashSet<>();
    // taken back or not, nobody knows: their requests fail, and no consumer takes them beyond its quota
    Set<String> unknown = new HashSet<>();
    List<Future<Void>> calls = new ArrayList<>();
    takeBack.forEach((consumer, eventIds) -> {
      List<String> ids = new ArrayList<>(eventIds);
      calls.add(store.eval(Script.RETRACT, Keys.spool(consumer), ids).<Void>map(reply -> {
        if (reply.type() != ResponseType.MULTI) {
          return null; // deleted meanwhile: it holds nothing
        }
        copies.releaseAnswered(store, consumer, reply.get(ids.size()), 0);
        for (int i = 0; i < ids.size(); i++) {
          if (reply.get(i).toInteger() == 1) {
            takenFrom.computeIfAbsent(consumer, c -> new ArrayList<>()).add(ids.get(i));
          } else {
            kept.add(ids.get(i));
          }
        }
        return null;
      }).recover(failure -> {
        kept.addAll(ids);
        unknown.addAll(ids);
        failHolding(round, ids);
        return Future.<Void>succeededFuture();
      }));
    });
    return Future.join(calls).transform(ignored -> restore(round, takenFrom, kept, unknown)).transform(restored -> {
      if (!kept.isEmpty()) {
        LOG.log(System.Logger.Level.INFO, "Events refused by a consumer whose settings had just changed were handed"
            + " out elsewhere before they could be taken back; confirmed for those that hold them: " + kept);
      }
      return Future.succeededFuture(kept);
    });
  }

  /** Fails the requests of the round that hold any of these events: they are stored for some consumers only. */
  private static void failHolding(List<PendingPublish> round, Collection<String> eventIds) {
    ApiException unknown = new ApiException(ErrorCode.OUTCOME_UNKNOWN,
        "Redis failed part-way: the events were stored for some consumers only; publish again");
    round.stream().filter(publish -> eventIds.stream().anyMatch(id -> publish.spooled(id) != null))
        .forEach(publish -> publish.fail(unknown));
  }

  /**
   * Spools again the kept events where they were taken back, and into the consumers that refused
   * them for their own quota, beyond it: a confirmed event is held by every enabled consumer that
   * refuses for all. Fails the requests it could not.
   */
  private Future<Void> restore(List<PendingPublish> round, Map<String, List<String>> takenFrom, Set<String> kept,
      Set<String> unknown) {
    // consumer -> eventId -> whether it goes in beyond the consumer's own quota
    Map<String, Map<String, Boolean>> again = new LinkedHashMap<>();
    takenFrom.forEach((consumer, ids) -> ids.stream().filter(kept::contains)
        .forEach(id -> again.computeIfAbsent(consumer, c -> new LinkedHashMap<>()).put(id, false)));
    for (String id : kept) {
      if (unknown.contains(id)) {
        continue;
      }
      round.forEach(publish -> publish.overQuotaIn(id)
          .forEach(refuser -> again.computeIfAbsent(refuser, c -> new LinkedHashMap<>()).put(id, true)));
    }
    Map<String, List<Object>> spools = new LinkedHashMap<>();
    Map<String, Set<String>> sentTo = new LinkedHashMap<>();
    again.forEach((consumer, ids) -> {
      List<Object> events = new ArrayList<>();
      Set<String> sent = new HashSet<>();
      ids.forEach((id, beyondQuota) -> round.stream().map(publish -> publish.spooled(id, beyondQuota))
          .filter(java.util.Objects::nonNull).findFirst().ifPresent(event -> {
            events.addAll(event);
            sent.add(id);
          }));
      if (!sent.isEmpty()) {
        spools.put(consumer, events);
        sentTo.put(consumer, sent);
      }
    });
    if (spools.isEmpty()) {
      return Future.succeededFuture();
    }
    // spooled a second time: a copy of their own (see RoundCopies)
    Future<Map<String, Long>> copied = copies.shared() ? RoundCopies.write(copies, store, consumers, spools, id -> true)
        : Future.succeededFuture(Map.of());
    return copied.transform(done -> {
      if (done.failed()) {
        failHolding(round, sentTo.values().stream().flatMap(Set::stream).toList());
        return Future.<Void>succeededFuture();
      }
      return restoreCalls(round, again, spools, sentTo, done.result());
    });
  }

  private Future<Void> restoreCalls(List<PendingPublish> round, Map<String, Map<String, Boolean>> again,
      Map<String, List<Object>> spools, Map<String, Set<String>> sentTo, Map<String, Long> copiesKept) {
    List<Future<Void>> calls = new ArrayList<>();
    spools.forEach((consumer, events) -> {
      Map<String, Boolean> ids = again.get(consumer);
      Set<String> sent = sentTo.get(consumer);
      List<Object> args = new ArrayList<>(List.of("", idempotencyWindowMs, ""));
      args.addAll(events);
      calls.add(store.eval(Script.PUBLISH, Keys.spool(consumer), args)
          .onFailure(failure -> fileWritten(consumer, failure))
          .compose(reply -> keptLongEnough(consumer, events, copiesKept, SpoolReply.parse(reply)).map(reply)).<Void>map(reply -> {
        SpoolReply spooled = SpoolReply.parse(reply);
        if (spooled.took()) {
          dueTimes.file(consumer, reply.get(1).toLong());
        }
        // the consumer must hold them again for the answer to count it (one disabled meanwhile need not)
        List<String> missing = new ArrayList<>();
        for (String id : sent) {
          if (spooled.holds(id) && ids.get(id)) {
            round.forEach(publish -> publish.spooledBeyondQuota(consumer, id));
          } else if (!spooled.holds(id) && !spooled.disabled()) {
            missing.add(id);
          } else if (!spooled.holds(id)) {
            // disabled meanwhile: it holds nothing of it, whatever its first spool call took
            round.forEach(publish -> publish.notHeldBy(consumer, id));
          }
        }
        if (!missing.isEmpty()) {
          failHolding(round, missing);
        }
        return null;
      }).onFailure(failure -> failHolding(round, sent)));
    });
    return Future.join(calls).mapEmpty();
  }

  /**
   * Pushes the expiry of the copies a spool call's stubs name that are kept for less than the
   * retention its consumer answered (docs/internals.md, "Retention"); the publish is confirmed
   * only once they are kept long enough. A consumer deleted before its spool call has its marks on
   * the round's copies released.
   */
  private Future<Void> keptLongEnough(String consumer, List<Object> events, Map<String, Long> kept,
      SpoolReply spooled) {
    if (spooled.deleted() && !kept.isEmpty()) {
      // it holds nothing, and never acquired the round's copies: its marks go now, not at their expiry
      copies.release(store, consumer, RoundCopies.named(events));
    } else if (!spooled.took() && !kept.isEmpty()) {
      // disabled: it let go of the round's copies in its freed list; the scheduler's step releases them now
      dueTimes.file(consumer, 0);
    }
    // the common case, the node's settings as the consumer's: no stub need be read
    if (!spooled.took() || kept.values().stream().allMatch(basis -> basis >= spooled.retentionMs())) {
      return Future.succeededFuture();
    }
    Set<String> tooShort = RoundCopies.keptTooShort(events, kept, spooled.retentionMs());
    return tooShort.isEmpty() ? Future.succeededFuture() : copies.cover(store, tooShort, spooled.retentionMs());
  }

  /**
   * A spool call that failed only because too few replicas confirmed its writes: the primary holds
   * its events (answered 503 all the same), so what they made due (a delay, a TTL) is filed.
   */
  private void fileWritten(String consumer, Throwable failure) {
    StoreException.written(failure).filter(reply -> reply.type() == ResponseType.MULTI && SpoolReply.parse(reply).took())
        .ifPresent(reply -> dueTimes.file(consumer, reply.get(1).toLong()));
  }

  /**
   * Counts events a consumer skipped (disabled or full, it lets its publishers through); a count,
   * so best effort.
   */
  private void discarded(String consumer, int events) {
    store.send(Request.cmd(Command.HINCRBY).arg(Keys.consumer(consumer).get(0)).arg("discarded").arg(events))
        .onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Could not count discarded events: " + failure.getMessage()));
  }
}
