package io.herald.store;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.function.LongSupplier;

/**
 * This node's estimate of Redis' clock, so that every node stamps events on one time line whatever
 * its own clock says. Deadlines are never computed here: scripts read TIME inside Redis.
 */
public final class RedisClock {
  private final LongSupplier localClock;
  private volatile long offsetMs;

  public RedisClock(LongSupplier localClock) {
    this.localClock = localClock;
  }

  /** Measures the offset to Redis' TIME, assuming the reply came back half-way through the trip. */
  public Future<Void> sync(RedisStore store) {
    long sentAt = localClock.getAsLong();
    return store.send(Request.cmd(Command.TIME)).map(time -> {
      long receivedAt = localClock.getAsLong();
      long redisMs = time.get(0).toLong() * 1000 + time.get(1).toLong() / 1000;
      offsetMs = redisMs - (sentAt + receivedAt) / 2;
      return null;
    });
  }

  public long now() {
    return localClock.getAsLong() + offsetMs;
  }
}
