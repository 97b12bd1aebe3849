package io.herald.client;

import java.time.Duration;

/**
 * How a {@link Subscriber} takes, runs and settles deliveries.
 *
 * @param window         most deliveries held unsettled at once (flow control: the gateway sends no more
 *                       until some are settled); at most the consumer's {@code maxUnacked}
 * @param parallelism    handler threads
 * @param ackTimeout     the consumer's ack timeout, which paces lease extension; null: read from the
 *                       consumer's settings at start
 * @param maxLease       how long a delivery's deadline is extended at most; past it, it is left to
 *                       come again
 * @param pollWait       how long a long poll waits (polling subscriber), 1..20 s
 * @param initialBackoff the first wait before reconnecting or polling again after a failure
 * @param maxBackoff     the longest such wait
 * @param closeTimeout   how long {@code close} lets running handlers finish, and then waits for the
 *                       answers to the settlements sent
 * @param beforeAck      runs before each ack (null: none)
 * @param processed      events processed already, whose repeats are acked without the handler (null: none)
 */
public record SubscriberSettings(int window, int parallelism, Duration ackTimeout, Duration maxLease, Duration pollWait,
    Duration initialBackoff, Duration maxBackoff, Duration closeTimeout, BeforeAck beforeAck, ProcessedEvents processed) {

  public SubscriberSettings {
    if (window < 1 || parallelism < 1) {
      throw new IllegalArgumentException("window and parallelism must be positive");
    }
    if (pollWait.toMillis() < 1000 || pollWait.toMillis() > 20_000) {
      // shorter, empty polls would follow each other without a pause and use up the consumer's rate limit
      throw new IllegalArgumentException("pollWait must be in 1..20 s");
    }
    if (ackTimeout != null && (ackTimeout.toMillis() < 5000 || ackTimeout.toMillis() > 3_600_000)) {
      throw new IllegalArgumentException("ackTimeout must be in 5 s..1 h, as a consumer's");
    }
  }

  /** A window of 100, 4 handler threads, leases up to 1 h, 20 s long polls, backoff 200 ms..30 s. */
  public static SubscriberSettings defaults() {
    return new SubscriberSettings(100, 4, null, Duration.ofHours(1), Duration.ofSeconds(20), Duration.ofMillis(200),
        Duration.ofSeconds(30), Duration.ofSeconds(30), null, null);
  }

  public SubscriberSettings withWindow(int window) {
    return new SubscriberSettings(window, parallelism, ackTimeout, maxLease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, beforeAck, processed);
  }

  public SubscriberSettings withParallelism(int threads) {
    return new SubscriberSettings(window, threads, ackTimeout, maxLease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, beforeAck, processed);
  }

  public SubscriberSettings withAckTimeout(Duration timeout) {
    return new SubscriberSettings(window, parallelism, timeout, maxLease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, beforeAck, processed);
  }

  public SubscriberSettings withMaxLease(Duration lease) {
    return new SubscriberSettings(window, parallelism, ackTimeout, lease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, beforeAck, processed);
  }

  public SubscriberSettings withBackoff(Duration initial, Duration max) {
    return new SubscriberSettings(window, parallelism, ackTimeout, maxLease, pollWait, initial, max, closeTimeout,
        beforeAck, processed);
  }

  public SubscriberSettings withBeforeAck(BeforeAck hook) {
    return new SubscriberSettings(window, parallelism, ackTimeout, maxLease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, hook, processed);
  }

  /** Acks repeats of events these processed already, without running the handler (see {@link ProcessedEvents}). */
  public SubscriberSettings withProcessedEvents(ProcessedEvents events) {
    return new SubscriberSettings(window, parallelism, ackTimeout, maxLease, pollWait, initialBackoff, maxBackoff,
        closeTimeout, beforeAck, events);
  }
}
