package io.herald.lifecycle;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A node's way out. Once it drains, readiness answers 503, new publishes, polls and sockets are
 * refused ({@code NODE_SHUTTING_DOWN}, so clients go to another node), parked polls answer at once,
 * and the node waits for the requests and publishes in flight before it closes its sockets.
 * Thread-safe: shared by the node's verticles.
 */
public final class Drain {
  private static final System.Logger LOG = System.getLogger(Drain.class.getName());
  private static final long CHECK_MS = 10;

  private volatile boolean draining;
  private final AtomicInteger inFlight = new AtomicInteger();

  public boolean draining() {
    return draining;
  }

  /** Counts an operation in; refuses it once the node drains. Each admitted one must {@link #leave}. */
  public void enter() {
    // counted before the check: a drain that begins meanwhile waits for it
    inFlight.incrementAndGet();
    if (draining) {
      inFlight.decrementAndGet();
      throw refusal();
    }
  }

  /** Counts an operation in whether the node drains or not (acks, admin reads: they finish). */
  public void count() {
    inFlight.incrementAndGet();
  }

  public void leave() {
    inFlight.decrementAndGet();
  }

  /** What is refused while the node drains. */
  public static ApiException refusal() {
    return new ApiException(ErrorCode.NODE_SHUTTING_DOWN, "This node is shutting down: send the request to another node");
  }

  /** Begins to drain; completes once nothing is in flight, or after {@code maxMs} whatever is. */
  public Future<Void> begin(Vertx vertx, long maxMs) {
    draining = true;
    LOG.log(System.Logger.Level.INFO, "Draining: new publishes, polls and sockets are refused; waiting for "
        + inFlight.get() + " requests in flight (" + maxMs + " ms at most)");
    Promise<Void> idle = Promise.promise();
    long startedAt = System.nanoTime();
    check(vertx, idle, startedAt, startedAt + maxMs * 1_000_000);
    return idle.future();
  }

  private void check(Vertx vertx, Promise<Void> idle, long startedAt, long giveUpAt) {
    int left = inFlight.get();
    if (left <= 0) {
      LOG.log(System.Logger.Level.INFO, "Drained in " + (System.nanoTime() - startedAt) / 1_000_000 + " ms");
      idle.complete();
    } else if (System.nanoTime() - giveUpAt >= 0) {
      LOG.log(System.Logger.Level.WARNING, "Stopping with " + left + " requests still in flight: the drain's time is up");
      idle.complete();
    } else {
      vertx.setTimer(CHECK_MS, t -> check(vertx, idle, startedAt, giveUpAt));
    }
  }
}
