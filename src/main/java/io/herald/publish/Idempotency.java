package io.herald.publish;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Idempotent publishing: an event with an {@code idempotencyKey} claims the key on its topic for
 * the dedup window before it is spooled. A repeat finds the claim: if the first publish was stored,
 * the repeat answers its eventId ({@code duplicate: true}) and stores nothing; if its outcome is
 * not known (it is still on its way, or Redis failed under it), the repeat spools the same eventId
 * again, which a consumer that had it already (whatever became of it there since) ignores, so a
 * publish that timed out is safe to retry.
 */
final class Idempotency {
  private final RedisStore store;
  private final long windowMs;

  Idempotency(RedisStore store, long windowMs) {
    this.store = store;
    this.windowMs = windowMs;
  }

  /** One event of the round with an idempotency key. */
  record Claimed(PendingPublish publish, int index) {}

  /** Claims the keys of the round's events (one call per topic) and applies what was found. */
  Future<Void> claim(List<PendingPublish> round) {
    Map<String, List<Claimed>> byTopic = new LinkedHashMap<>();
    Map<String, Claimed> byEventId = new HashMap<>();
    for (PendingPublish publish : round) {
      for (int i : publish.keyed()) {
        Claimed claimed = new Claimed(publish, i);
        byTopic.computeIfAbsent(publish.topic.name(), t -> new ArrayList<>()).add(claimed);
        byEventId.put(publish.eventId(i), claimed);
      }
    }
    if (byTopic.isEmpty()) {
      return Future.succeededFuture();
    }
    List<Future<Void>> calls = new ArrayList<>();
    byTopic.forEach((topic, claims) -> {
      List<String> keys = new ArrayList<>();
      List<Object> args = new ArrayList<>(List.of(windowMs));
      for (Claimed claimed : claims) {
        keys.add(Keys.idempotency(topic, claimed.publish().idempotencyKey(claimed.index())));
        args.add(claimed.publish().eventId(claimed.index()));
      }
      calls.add(store.eval(Script.IDEM_CLAIM, keys, args).<Void>map(answers -> {
        for (int i = 0; i < claims.size(); i++) {
          apply(claims.get(i), answers.get(i), byEventId);
        }
        return null;
      }).recover(failure -> {
        // only this topic's requests fail; the rest of the round goes on
        ApiException refusal = claimFailed(failure);
        claims.forEach(claimed -> claimed.publish().fail(refusal));
        return Future.succeededFuture();
      }));
    });
    return Future.all(calls).mapEmpty();
  }

  /**
   * What a request is told when its claims failed: nothing of it was stored; a claim may stand
   * (unconfirmed by replicas, or its answer lost), which a retry with the same key takes over.
   */
  private static ApiException claimFailed(Throwable failure) {
    ApiException mapped = ApiException.from(failure, true);
    return mapped.code() != ErrorCode.OUTCOME_UNKNOWN ? ApiException.from(failure, false)
        : new ApiException(ErrorCode.OUTCOME_UNKNOWN, "Redis did not confirm the idempotencyKey's claim (too few"
            + " replicas took it, or its answer was lost): nothing was stored; publish again with the same idempotencyKey");
  }

  private static void apply(Claimed claimed, Response answer, Map<String, Claimed> byEventId) {
    String[] words = answer.toString().split(" ");
    switch (words[0]) {
      case "D" -> claimed.publish().storedBefore(claimed.index(), words[1], Integer.parseInt(words[2]));
      case "P" -> {
        Claimed first = byEventId.get(words[1]);
        if (first != null) {
          claimed.publish().sameAs(claimed.index(), first.publish(), first.index());
        } else {
          claimed.publish().respool(claimed.index(), words[1]);
        }
      }
      default -> { } // claimed now: spooled as any event
    }
  }

  /**
   * Records how the round's claims ended: stored (later repeats are answered without spooling) or
   * refused (the claim is dropped). Claims of a request that failed stay as they are, so a retry
   * spools again. Best effort: a claim left unsettled only makes a retry spool the same eventId again.
   */
  void settle(List<PendingPublish> round) {
    Map<String, List<String>> keys = new LinkedHashMap<>();
    Map<String, List<Object>> args = new LinkedHashMap<>();
    for (PendingPublish publish : round) {
      if (publish.promise.future().failed()) {
        continue;
      }
      for (int i : publish.keyed()) {
        String outcome = publish.claimOutcome(i);
        if (outcome != null) {
          String topic = publish.topic.name();
          keys.computeIfAbsent(topic, t -> new ArrayList<>()).add(Keys.idempotency(topic, publish.idempotencyKey(i)));
          args.computeIfAbsent(topic, t -> new ArrayList<>()).addAll(List.of(publish.eventId(i), outcome));
        }
      }
    }
    keys.forEach((topic, topicKeys) -> store.eval(Script.IDEM_SETTLE, topicKeys, args.get(topic)));
  }
}
