package io.herald.publish;

import io.herald.store.RedisClock;
import io.herald.store.RedisStore;
import io.vertx.core.Future;
import java.security.SecureRandom;
import java.util.function.Function;

/**
 * Makes eventIds on the node, without a call to Redis: {@code <12 hex digits of the publish ms by
 * Redis' clock>-<16 hex digits>}, the 16 being a random 40-bit number of this maker (one per HTTP
 * verticle instance) and a 24-bit count within the millisecond. Ids of one maker sort in the order
 * it made them (its ms never goes back); ids of different makers sort by ms first, so in publish
 * order to within the makers' reading of Redis' clock ({@link RedisClock}). No key that every
 * publish touches, so publishing spreads over a Redis Cluster's shards. Used on one event loop.
 */
public final class EventIds {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int COUNT_BITS = 24;
  private static final long COUNT_LIMIT = 1L << COUNT_BITS;

  private final Function<RedisStore, Future<Long>> clock;
  private final long maker = RANDOM.nextLong() & ((1L << 40) - 1);
  private long lastMs;
  private long count;

  EventIds(RedisClock clock) {
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
   * Reserves {@code n} (at most 2^24) ids of one millisecond: {publishedAt, first sequence}, the
   * sequences following one another (see {@link EventBlobs#eventId}).
   */
  Future<long[]> reserve(RedisStore store, int n) {
    return clock.apply(store).map(now -> {
      if (now > lastMs) {
        lastMs = now;
        count = 0;
      }
      if (count + n > COUNT_LIMIT) {
        // this millisecond's ids are all taken: the next one's (a clock a little ahead, never behind)
        lastMs++;
        count = 0;
      }
      long first = (maker << COUNT_BITS) | count;
      count += n;
      return new long[] {lastMs, first};
    });
  }
}
