package io.herald.client;

import java.util.concurrent.CompletableFuture;

/**
 * Takes a consumer's events and runs a handler on each, over a WebSocket in push mode
 * ({@link HeraldClient#subscriber}) or by HTTP long polling ({@link HeraldClient#pollingSubscriber}),
 * the same way: acks what the handler finished, nacks what it failed, extends what it still works on,
 * reconnects (to the next node) after failures, and waits out a blocked consumer's 429.
 */
public interface Subscriber extends AutoCloseable {
  /** Starts taking events; returns at once. */
  Subscriber start();

  /**
   * Completes exceptionally (with the {@link HeraldException}) when the gateway refused the
   * subscriber for good: credentials, grants, an unknown consumer, a bad setting. Never completes
   * normally before {@link #close}.
   */
  CompletableFuture<Void> stopped();

  /** What it did so far. */
  SubscriberStats stats();

  /**
   * Stops taking events; lets the handlers running finish (up to {@code closeTimeout}) and settles
   * them; nacks what was received and not started, so it comes again at once; waits for the gateway to
   * answer every settlement sent (up to {@code closeTimeout} again); then disconnects. Returned, what
   * it acked is stored.
   */
  @Override
  void close();
}
