package io.herald.cli;

import java.util.Arrays;

/** Latency samples in nanoseconds, kept whole (a bench run holds at most some millions), and their percentiles. */
final class Latencies {
  private long[] samples = new long[1024];
  private int size;

  synchronized void add(long nanos) {
    if (size == samples.length) {
      samples = Arrays.copyOf(samples, size * 2);
    }
    samples[size++] = nanos;
  }

  synchronized int size() {
    return size;
  }

  /** The {@code percentile}th sample in milliseconds (nearest rank); 0 without samples. */
  synchronized double millis(double percentile) {
    if (size == 0) {
      return 0;
    }
    long[] sorted = Arrays.copyOf(samples, size);
    Arrays.sort(sorted);
    int rank = (int) Math.ceil(percentile / 100.0 * size);
    return sorted[Math.max(0, Math.min(size, rank) - 1)] / 1e6;
  }
}
