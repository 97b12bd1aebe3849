package io.herald.publish;

import io.herald.store.RedisClock;
import io.herald.store.RedisStore;
import io.vertx.core.Future;
import java.security.SecureRandom;
import java.util.function.Function;

/**
 * Makes eventIds on the node, without a call to Redis: {@code <12 hex digits of the publish ms by
 * Redis' clock>-<16 hex digits>}, the 16 being a random 40-bit number of this maker (one per node,
 * shared by its event loops) and a 24-bit count within the millisecond. Ids of one maker sort in
 * the order it made them (its ms never goes back), so a publish sent to a node after another was
 * confirmed gets a later id, whichever verticle instance takes it; ids of different makers sort by
 * ms first, so in publish order to within the makers' reading of Redis' clock ({@link RedisClock}).
 * No key that every publish touches, so publishing spreads over a Redis Cluster's shards.
 *
 * <p>Ids are reserved in blocks of {@value #BLOCK} counts aligned on {@value #BLOCK}, one block per
 * stored copy of a round's events (docs/internals.md), so that an eventId names its copy
 * ({@link io.herald.copy.Copies#copyOf}).
 */
public final class EventIds {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int COUNT_BITS = 24;
  private static final long COUNT_LIMIT = 1L << COUNT_BITS;
  /** The counts of one block: the most events a copy holds. */
  static final int BLOCK = 4096;

  private final Function<RedisStore, Future<Long>> clock;
  private final long maker = RANDOM.nextLong() & ((1L << 40) - 1);
  private long lastMs;
  private long count;

  public EventIds(RedisClock clock) {
    this(clock::now);
  }

  /** With {@code clock} telling Redis' time (a test's clock). */
  EventIds(Function<RedisStore, Future<Long>> clock) {
    this.clock = clock;
  }

  /** The publish time an eventId tells: ms since the epoch by Redis' clock. */
  public static long publishedAt(String eventId) {
    return Long.parseLong(eventId, 0, 12, 16);
  }

  /**
   * Reserves {@code blocks} blocks of one millisecond (at most 2^12): {publishedAt, first sequence
   * of the first block}; block k starts at that sequence + k·{@value #BLOCK} (see
   * {@link EventBlobs#eventId}).
   */
  Future<long[]> reserve(RedisStore store, int blocks) {
    return clock.apply(store).map(now -> next(now, blocks));
  }

  private synchronized long[] next(long now, int blocks) {
    {
      if (now > lastMs) {
        lastMs = now;
        count = 0;
      }
      long n = (long) blocks * BLOCK;
      if (count + n > COUNT_LIMIT) {
        // this millisecond's ids are all taken: the next one's (a clock a little ahead, never behind)
        lastMs++;
        count = 0;
      }
      long first = (maker << COUNT_BITS) | count;
      count += n;
      return new long[] {lastMs, first};
    }
  }
}
