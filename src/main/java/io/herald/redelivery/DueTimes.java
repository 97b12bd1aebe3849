package io.herald.redelivery;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Vertx;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Files with the redelivery scheduler when a consumer next has timed work (a deadline, a backoff or
 * nack delay ending, a retention expiry), as the scripts that change it report. The scripts report
 * a time only when it may be earlier than all the consumer's other timed work (the scheduler's
 * entry is never later than that), so nothing is cached here: a cache of what the index holds goes
 * stale whenever another node's scheduler raises the entry. A filing that fails is tried again
 * until it lands. One per verticle instance; event-loop confined.
 */
public final class DueTimes {
  private static final System.Logger LOG = System.getLogger(DueTimes.class.getName());
  /** How soon a failed filing is tried again. */
  static final long RETRY_MS = 50;

  private final Vertx vertx;
  private final RedisStore store;
  /** Consumer → the earliest time of the filings that failed, until one lands. */
  private Map<String, Long> unfiled = new HashMap<>();
  private boolean retrying;
  private boolean failing;

  public DueTimes(Vertx vertx, RedisStore store) {
    this.vertx = vertx;
    this.store = store;
  }

  /** Files {@code at} (Redis time; -1: nothing to file) for {@code consumer}. */
  public void file(String consumer, long at) {
    if (at < 0) {
      return;
    }
    store.eval(Script.DUE_LOWER, List.of(Keys.DUE, Keys.DUE_VERSIONS), List.of(consumer, at))
        .onSuccess(ok -> {
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
          unfiled.merge(consumer, at, Math::min);
          retrySoon();
        });
  }

  private void retrySoon() {
    if (retrying) {
      return;
    }
    retrying = true;
    vertx.setTimer(RETRY_MS, t -> {
      retrying = false;
      Map<String, Long> again = unfiled;
      unfiled = new HashMap<>();
      again.forEach(this::file);
    });
  }
}
