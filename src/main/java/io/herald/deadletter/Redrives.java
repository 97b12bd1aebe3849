package io.herald.deadletter;

import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerScripts;
import io.herald.consumer.ConsumerSettings;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolFigures;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicSettings;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Redrives events of a consumer's dead-letter or error queue back to its queue. The queues count
 * against no quota (retention bounds them); back in the spool an event counts against the
 * consumer's own quotas (checked exactly by {@code redrive.lua}) and the gateway's and its
 * namespace's (judged by the ledger first, which holds the room until the script's figures replace
 * the hold), not its topic's. An event that does not fit stays in its queue: {@code QUOTA_EXCEEDED}.
 *
 * <p>A redrive of {@code all} moves {@value #CHUNK} events per script call, {@value #PAUSE_MS} ms
 * apart, so that emptying a queue of a million events leaves Redis to live traffic in between; it
 * stops at the first event that does not fit.
 */
final class Redrives {
  static final int CHUNK = 500;
  static final long PAUSE_MS = 5;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Vertx vertx;
  private final RedisStore store;
  private final SpoolLedger ledger;
  private final HoldSettler settler;
  private final DueTimes dueTimes;

  Redrives(Vertx vertx, RedisStore store, SpoolLedger ledger, HoldSettler settler) {
    this.vertx = vertx;
    this.store = store;
    this.ledger = ledger;
    this.settler = settler;
    this.dueTimes = new DueTimes(vertx, store);
  }

  /**
   * What one redrive call did: events moved, whether one did not fit, statuses of named events, and
   * the consumer's figures at its end (when it realized a ledger hold; else null).
   */
  private record Step(long moved, boolean full, Map<String, String> statuses, SpoolFigures figures) {}

  /** Redrives the named events: {@code {"redriven":n,"results":[{eventId, status}...]}}. */
  Future<JsonObject> named(ConsumerSettings consumer, String kind, List<String> eventIds) {
    // an eventId named twice is redriven once, and both its rows tell how
    return step(consumer, kind, eventIds.stream().distinct().toList()).map(step -> {
      JsonArray results = new JsonArray();
      eventIds.forEach(id -> results.add(new JsonObject().put("eventId", id).put("status", step.statuses().get(id))));
      return new JsonObject().put("redriven", step.moved()).put("results", results);
    });
  }

  /** Redrives the queue from its head until it is empty or an event does not fit: {@code {"redriven":n}}. */
  Future<JsonObject> all(ConsumerSettings consumer, String kind) {
    Promise<Long> done = Promise.promise();
    all(consumer, kind, 0, done);
    return done.future().map(moved -> new JsonObject().put("redriven", moved));
  }

  private void all(ConsumerSettings consumer, String kind, long movedSoFar, Promise<Long> done) {
    step(consumer, kind, null).onFailure(done::fail).onSuccess(step -> {
      if (step.full() || step.moved() < CHUNK) {
        done.complete(movedSoFar + step.moved());
      } else {
        vertx.setTimer(PAUSE_MS, t -> all(consumer, kind, movedSoFar + step.moved(), done));
      }
    });
  }

  /** One redrive call: of {@code named} events, or of the queue's head when null. */
  private Future<Step> step(ConsumerSettings consumer, String kind, List<String> named) {
    if (quotas().spoolBytes() == null && quotas().namespace(consumer.admission().namespace()) == null) {
      return redrive(consumer, kind, named, "", Map.of());
    }
    List<Object> args = new ArrayList<>(List.of(kind, named == null ? "*" : "", CHUNK));
    if (named != null) {
      args.addAll(named);
    }
    return run(consumer, Script.FAILED_SIZES, args, false).compose(sizes -> {
      List<String> ids = new ArrayList<>();
      List<Integer> bytes = new ArrayList<>();
      for (int i = 0; i < sizes.size(); i += 2) {
        ids.add(sizes.get(i).toString());
        bytes.add(sizes.get(i + 1).toInteger());
      }
      if (ids.isEmpty()) {
        return redrive(consumer, kind, named, "", Map.of());
      }
      String round = HexFormat.of().formatHex(randomBytes());
      String hold = round + ":" + consumer.name();
      SpoolLedger.Group group = new SpoolLedger.Group(TopicSettings.defaults(""), List.of(consumer), bytes);
      return ledger.reserve(store, round, List.of(group)).compose(verdicts -> {
        List<String> admitted = new ArrayList<>();
        Map<String, String> refused = new HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
          SpoolLedger.Verdict verdict = verdicts.get(i);
          boolean fits = verdict.refusal() == null && verdict.skipping().isEmpty();
          // the head goes back in order: it stops at the first event that does not fit
          if (fits && (named != null || refused.isEmpty())) {
            admitted.add(ids.get(i));
          } else {
            refused.put(ids.get(i), "QUOTA_EXCEEDED");
          }
        }
        List<String> sent = named == null ? admitted
            : named.stream().filter(id -> !refused.containsKey(id)).toList();
        return redrive(consumer, kind, sent, hold, refused)
            // the script's figures replace the hold; without them (it failed) the hold lapses
            .onComplete(done -> settler.settle(List.of(hold),
                done.succeeded() ? List.of(done.result().figures()) : List.of()))
            .map(done -> refused.isEmpty() ? done : new Step(done.moved(), true, done.statuses(), done.figures()));
      });
    });
  }

  /** Runs {@code redrive.lua}; {@code refused} are the statuses of named events the ledger kept back. */
  private Future<Step> redrive(ConsumerSettings consumer, String kind, List<String> ids, String holdId,
      Map<String, String> refused) {
    List<Object> args = new ArrayList<>(List.of(kind, ids == null ? "*" : "", CHUNK, holdId));
    if (ids != null) {
      args.addAll(ids);
    }
    // redriven events' retention ends are in the expiry index: the scheduler must know the first
    return ConsumerScripts.runWriting(store, Script.REDRIVE, consumer.name(), Keys.consumer(consumer.name()), args,
        reply -> dueTimes.file(consumer.name(), reply.get(2).toLong())).map(reply -> {
      Map<String, String> statuses = new HashMap<>(refused);
      int count = reply.get(3).toInteger();
      for (int i = 0; i < count; i++) {
        statuses.put(ids.get(i), reply.get(4 + i).toString());
      }
      SpoolFigures figures = holdId.isEmpty() ? null : SpoolFigures.parse(consumer.name(), consumer, reply, 4 + count);
      return new Step(reply.get(0).toLong(), reply.get(1).toInteger() == 1, statuses, figures);
    });
  }

  private Future<Response> run(ConsumerSettings consumer, Script script, List<Object> args, boolean writes) {
    return ConsumerScripts.run(store, script, consumer.name(), Keys.consumer(consumer.name()), args, writes);
  }

  private HeraldConfig.Quotas quotas() {
    return ledger.quotas();
  }

  private static byte[] randomBytes() {
    byte[] bytes = new byte[12];
    RANDOM.nextBytes(bytes);
    return bytes;
  }
}
