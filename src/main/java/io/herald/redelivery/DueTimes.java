package io.herald.redelivery;

import io.herald.Addresses;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Files with the redelivery scheduler when a consumer next has timed work (a deadline, a backoff or
 * nack delay ending, a retention expiry, a publisher's delay ending), as the scripts that change it
 * report. The scripts report a time only when it may be earlier than all the consumer's other
 * timed work (the scheduler's entry is never later than that), so nothing is cached here: a cache
 * of what the index holds goes stale whenever another node's scheduler raises the entry.
 *
 * <p>Filings gather for {@value #GATHER_MS} ms and go in one call, each consumer's earliest: at a
 * few events per script call, filing each deadline on its own was a script call per event. The
 * times filed are mostly an ack timeout (5 s or more) or a backoff away, and a poll makes due
 * deliveries stale and releases due delayed events itself, so a few ms of gathering cost the
 * scheduler's lateness nothing that matters. A filing that fails is tried again until it lands; those still gathering when the node
 * stops are filed again by a scheduler's sweep. One per verticle instance; event-loop confined.
 */
public final class DueTimes {
  private static final System.Logger LOG = System.getLogger(DueTimes.class.getName());
  /** How long filings gather before they go. */
  static final long GATHER_MS = 5;
  /** How soon a failed filing is tried again. */
  static final long RETRY_MS = 50;

  private final Vertx vertx;
  private final RedisStore store;
  private final DueIndex index;
  /** Consumer → the earliest time to file, gathering for the next call. */
  private Map<String, Long> gathering = new HashMap<>();
  private boolean failing;

  public DueTimes(Vertx vertx, RedisStore store) {
    this.vertx = vertx;
    this.store = store;
    this.index = DueIndex.of(store);
  }

  /** Files {@code at} (Redis time; -1: nothing to file) for {@code consumer}. */
  public void file(String consumer, long at) {
    if (at < 0) {
      return;
    }
    if (gathering.isEmpty()) {
      vertx.setTimer(GATHER_MS, t -> send());
    }
    gathering.merge(consumer, at, Math::min);
  }

  private void send() {
    // one call per shard of the index
    Map<Integer, Map<String, Long>> shards = new HashMap<>();
    gathering.forEach((consumer, at) -> shards.computeIfAbsent(index.shardOf(consumer), shard -> new HashMap<>())
        .put(consumer, at));
    gathering = new HashMap<>();
    shards.forEach((shard, filings) -> {
      List<Object> args = new ArrayList<>();
      filings.forEach((consumer, at) -> {
        args.add(consumer);
        args.add(at);
      });
      long earliest = filings.values().stream().mapToLong(Long::longValue).min().orElseThrow();
      store.eval(Script.DUE_LOWER, index.keys(shard), args)
          .onSuccess(ok -> {
            // the node's scheduler may be idle until later than this
            vertx.eventBus().publish(Addresses.DUE_FILED, new JsonArray().add(shard).add(earliest));
            if (failing) {
              failing = false;
              LOG.log(System.Logger.Level.INFO, "Scheduling timed work works again");
            }
          })
          .onFailure(failure -> {
            if (!failing) {
              failing = true;
              LOG.log(System.Logger.Level.WARNING, "Could not schedule timed work (trying again): " + failure.getMessage());
            }
            vertx.setTimer(RETRY_MS, t -> filings.forEach(this::file));
          });
    });
  }
}
