package io.herald.redelivery;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Files with the redelivery scheduler when a consumer next has timed work (a deadline, a backoff or
 * nack delay ending, a retention expiry), as the scripts that change it report. One per verticle
 * instance; event-loop confined.
 */
public final class DueTimes {
  private static final System.Logger LOG = System.getLogger(DueTimes.class.getName());

  private final RedisStore store;
  /** Consumer → the due time this instance last filed (Redis time). */
  private final Map<String, Long> filed = new HashMap<>();

  public DueTimes(RedisStore store) {
    this.store = store;
  }

  /**
   * Files {@code at} (-1: nothing timed) unless a time this instance filed is still ahead and no
   * later: the scheduler only raises an entry after its time has come, so that entry still holds.
   * Saves a round trip on nearly every poll.
   */
  public void file(String consumer, long at, long now) {
    Long earlier = filed.get(consumer);
    if (at < 0 || earlier != null && earlier > now && earlier <= at) {
      return;
    }
    if (filed.size() > 10_000) {
      filed.clear();
    }
    filed.put(consumer, at);
    store.eval(Script.DUE_LOWER, List.of(Keys.DUE, Keys.DUE_VERSIONS), List.of(consumer, at))
        .onFailure(failure -> LOG.log(System.Logger.Level.WARNING,
            "Could not schedule the timed work of consumer " + consumer + ": " + failure.getMessage()));
  }
}
