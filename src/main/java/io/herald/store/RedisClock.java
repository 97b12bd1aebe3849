package io.herald.store;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Redis' clock as this node reads it without asking Redis each time: {@code TIME} now and then, the
 * reply placed half-way through its round trip and carried forward by the node's monotonic clock.
 * A new reading replaces the one in use only when it is more certain (its half round trip below
 * the old one's plus the drift the old one may have gathered since, taken as 100 ppm) or the old
 * one is five seconds old, so a reply delayed on a busy machine does not make the reading worse;
 * and at once when the store started over on new connections since (a failover: the reading is of
 * another server's clock).
 * The protocol's times are Redis' clock; what the node stamps with this (eventIds and the
 * publishedAt they carry) is off by about half the quickest round trip to Redis. Shared by the
 * node's verticles.
 */
public final class RedisClock {
  /** A reading older than this is refreshed in the background, while it is still used. */
  static final long REFRESH_NANOS = 1_000_000_000L;
  /** A reading older than this is not used: the next caller waits for a new one. */
  static final long EXPIRY_NANOS = 10_000_000_000L;
  private static final double DRIFT = 1e-4;

  /** {@code clients}: the store's {@link RedisStore#newClients()} when it was read. */
  private record Reading(double redisMs, long atNanos, long roundTripNanos, long clients) {
    double uncertaintyNanos(long nanos) {
      return roundTripNanos / 2.0 + (nanos - atNanos) * DRIFT;
    }

    long at(long nanos) {
      return (long) Math.floor(redisMs + (nanos - atNanos) / 1_000_000.0);
    }
  }

  private volatile Reading reading;
  private final AtomicBoolean refreshing = new AtomicBoolean();
  /** When the last background reading was started (a kept reading does not age this). */
  private volatile long refreshedAt = System.nanoTime();

  /** Redis' time in ms, read with {@code store} when this node has no recent reading of it. */
  public Future<Long> now(RedisStore store) {
    Reading last = reading;
    long nanos = System.nanoTime();
    if (last != null && nanos - last.atNanos < EXPIRY_NANOS && last.clients == store.newClients()) {
      if (nanos - refreshedAt > REFRESH_NANOS && refreshing.compareAndSet(false, true)) {
        refreshedAt = nanos;
        read(store).onComplete(done -> refreshing.set(false));
      }
      return Future.succeededFuture(last.at(nanos));
    }
    return read(store).map(fresh -> fresh.at(System.nanoTime()));
  }

  private Future<Reading> read(RedisStore store) {
    long sent = System.nanoTime();
    long clients = store.newClients();
    return store.send(Request.cmd(Command.TIME)).map(time -> {
      long received = System.nanoTime();
      double redisMs = time.get(0).toLong() * 1000.0 + time.get(1).toLong() / 1000.0;
      Reading fresh = new Reading(redisMs, sent + (received - sent) / 2, received - sent, clients);
      Reading last = reading;
      if (last == null || clients > last.clients || fresh.uncertaintyNanos(received) <= last.uncertaintyNanos(received)
          || received - last.atNanos >= EXPIRY_NANOS / 2) {
        reading = fresh;
        return fresh;
      }
      return last;
    });
  }
}
