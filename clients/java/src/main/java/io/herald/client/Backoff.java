package io.herald.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter: the n-th wait is a random time between half of and all of
 * min(max, initial·2ⁿ), so clients that lost the same node do not all come back at the same moment.
 */
final class Backoff {
  private final long initialMs;
  private final long maxMs;
  private int attempt;

  Backoff(Duration initial, Duration max) {
    this.initialMs = Math.max(1, initial.toMillis());
    this.maxMs = Math.max(initialMs, max.toMillis());
  }

  /** The next wait in milliseconds. */
  synchronized long nextMs() {
    long ceiling = Math.min(maxMs, initialMs << Math.min(attempt, 20));
    attempt++;
    return ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1);
  }

  synchronized void reset() {
    attempt = 0;
  }
}
