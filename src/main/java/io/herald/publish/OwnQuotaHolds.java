package io.herald.publish;

import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Room held in the own quota of each consumer that refuses for all (rejectPublishWhenRefused, with
 * quotaBytes or quotaEvents) before a round's spool calls: an event one of them has no room for is
 * refused to its publisher while no consumer holds it yet. (Judged in its spool call instead, such
 * an event was taken by the other consumers first and had to be taken back, and one of them might
 * have handed it out already.) Each consumer's spool call takes its hold ({@code own_hold.lua},
 * {@code publish.lua}).
 */
final class OwnQuotaHolds {
  /**
   * How long a hold lasts when its spool call never comes (its node went): then it goes. Longer
   * than a round can take (a hold, a ledger call, the spool calls, each up to a call's timeout).
   */
  private final long holdMs;

  private final RedisStore store;

  OwnQuotaHolds(RedisStore store) {
    this.store = store;
    this.holdMs = Math.max(30_000, 4 * store.timeoutMs());
  }

  /** Whether some request of the round matches a consumer whose own quota must hold room first. */
  boolean needed(List<PendingPublish> round) {
    for (PendingPublish publish : round) {
      if (!publish.ownQuotaRefusers().isEmpty()) {
        return true;
      }
    }
    return false;
  }

  /** One event of the round as a consumer's hold counts it. */
  private record Held(PendingPublish publish, int index, int size) {}

  /**
   * Holds room under {@code holdId} for the round's events at each such consumer, refusing in their
   * requests the events that do not fit. Answers the consumers that hold room (their spool call, or
   * {@link #release}, must take it); fails when a hold call failed (nothing was spooled).
   */
  Future<Set<String>> hold(List<PendingPublish> round, String holdId) {
    Map<String, List<Held>> byConsumer = new LinkedHashMap<>();
    for (PendingPublish publish : round) {
      for (ConsumerSettings consumer : publish.ownQuotaRefusers()) {
        for (int[] event : publish.heldSizes()) {
          byConsumer.computeIfAbsent(consumer.name(), c -> new ArrayList<>()).add(new Held(publish, event[0], event[1]));
        }
      }
    }
    if (byConsumer.isEmpty()) {
      return Future.succeededFuture(Set.of());
    }
    Set<String> holding = ConcurrentHashMap.newKeySet();
    List<Future<Void>> calls = new ArrayList<>();
    byConsumer.forEach((consumer, events) -> {
      List<Object> args = new ArrayList<>(List.of(holdId, holdMs));
      events.forEach(event -> args.add(event.size()));
      calls.add(store.eval(Script.OWN_HOLD, Keys.consumer(consumer), args)
          .map(reply -> judged(consumer, events, reply, holding)));
    });
    // a failed call may have held room all the same (its answer lost): let every hold go
    return Future.all(calls).map(done -> holding)
        .onFailure(failure -> release(byConsumer.keySet(), holdId));
  }

  private static Void judged(String consumer, List<Held> events, Response reply, Set<String> holding) {
    if (reply.type() != ResponseType.MULTI) {
      if (reply.toInteger() == -2) {
        // disabled since this node read its settings: it refuses them all
        events.forEach(event -> event.publish().refuse(event.index(), ApiException.consumerDisabled(consumer)));
      }
      // -1: deleted meanwhile; -3: it no longer refuses for all (its spool call skips what it
      // cannot take): it holds nothing
      return null;
    }
    for (int i = 0; i < events.size(); i++) {
      if (reply.get(i).toInteger() == 0) {
        events.get(i).publish().refuse(events.get(i).index(), ApiException.overOwnQuota(consumer));
      }
    }
    holding.add(consumer);
    return null;
  }

  /**
   * Lets the holds of consumers that get no spool call go at once (their events were all refused,
   * or the round failed); one whose release fails goes when its time comes.
   */
  void release(Set<String> consumers, String holdId) {
    consumers.forEach(consumer -> store.eval(Script.OWN_RELEASE, Keys.consumer(consumer), List.of(holdId)));
  }
}
