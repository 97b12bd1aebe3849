package io.herald.client;

import java.time.Duration;

/**
 * How a {@link Publisher} batches, bounds and retries.
 *
 * @param maxBatchEvents  most events in one request (1..1000)
 * @param maxBatchBytes   most bytes of events in one request
 * @param linger          how long a batch that is not full waits for more events
 * @param maxInFlight     most events published and not yet confirmed or refused; {@code publish} blocks
 *                        its caller while this many are (backpressure)
 * @param retryTimeout    how long a batch is retried after transient failures (503, lost connection,
 *                        timeout) before its events fail
 * @param initialBackoff  the first wait before a retry (doubling, with jitter)
 * @param maxBackoff      the longest wait before a retry
 */
public record PublisherSettings(int maxBatchEvents, int maxBatchBytes, Duration linger, int maxInFlight,
    Duration retryTimeout, Duration initialBackoff, Duration maxBackoff) {

  public PublisherSettings {
    if (maxBatchEvents < 1 || maxBatchEvents > 1000) {
      throw new IllegalArgumentException("maxBatchEvents must be in 1..1000, not " + maxBatchEvents);
    }
    if (maxBatchBytes < 1 || maxInFlight < 1) {
      throw new IllegalArgumentException("maxBatchBytes and maxInFlight must be positive");
    }
  }

  /** 100 events or 1 MiB per request, 5 ms linger, 1,000 in flight, retries for 2 minutes. */
  public static PublisherSettings defaults() {
    return new PublisherSettings(100, 1 << 20, Duration.ofMillis(5), 1000, Duration.ofMinutes(2), Duration.ofMillis(100),
        Duration.ofSeconds(5));
  }

  public PublisherSettings withMaxBatchEvents(int events) {
    return new PublisherSettings(events, maxBatchBytes, linger, maxInFlight, retryTimeout, initialBackoff, maxBackoff);
  }

  public PublisherSettings withLinger(Duration linger) {
    return new PublisherSettings(maxBatchEvents, maxBatchBytes, linger, maxInFlight, retryTimeout, initialBackoff, maxBackoff);
  }

  public PublisherSettings withMaxInFlight(int events) {
    return new PublisherSettings(maxBatchEvents, maxBatchBytes, linger, events, retryTimeout, initialBackoff, maxBackoff);
  }

  public PublisherSettings withRetryTimeout(Duration timeout) {
    return new PublisherSettings(maxBatchEvents, maxBatchBytes, linger, maxInFlight, timeout, initialBackoff, maxBackoff);
  }
}
