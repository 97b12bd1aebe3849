package io.herald.ws;

import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.Batch;
import io.herald.delivery.FullWindows;
import io.herald.delivery.PollService;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * Push mode of one socket: keeps at most {@code window} of its deliveries unacked, fetching with
 * long polls (woken by publishes and due deliveries on any node) while the window has room and the
 * socket's write queue is not full. A delivery leaves the window when it is acked or nacked over
 * this socket or when its deadline (as extended over this socket) passes: it is then stale, and no
 * longer this connection's. While the window is full the stream also asks Redis, at growing
 * intervals ({@value #FIRST_CHECK_MS} ms up to {@value #MAX_CHECK_MS} ms), which of its deliveries
 * are still out, so one settled by another path (an HTTP ack, another socket, a hand-out elsewhere)
 * leaves the window too; and at once when told of an HTTP ack or nack of its consumer, on any node
 * ({@link FullWindows}), once its first check filed it. Event-loop confined.
 */
final class PushStream {
  /** Longest a fetch stays parked before it asks again. */
  static final long FETCH_WAIT_MS = 60_000;
  /** The first check of a full window for deliveries settled elsewhere, and the longest interval. */
  static final long FIRST_CHECK_MS = 200;
  static final long MAX_CHECK_MS = 5_000;
  /**
   * The least time between the starts of two checks a settlement elsewhere asked for: under a steady
   * stream of HTTP acks of the consumer (most of them of other sockets' or pollers' deliveries) a
   * full window checks a few times a second, not once per round trip.
   */
  static final long TOLD_GAP_MS = 100;
  /**
   * Deadlines that pass within this of one another are looked at by one run of the window's
   * deadline timer: one timer per socket, not one per pushed batch (at thousands of batches a second
   * and a 30 s ack timeout, per-batch timers were 10⁵ live timers, each scanning the window).
   */
  static final long DEADLINE_GRAIN_MS = 100;

  private final Vertx vertx;
  private final ConsumerSettings consumer;
  private final PollService poller;
  private final Consumer<Buffer> push;
  private final BooleanSupplier writable;
  private final LongConsumer blocked;
  /** The socket's unacked deliveries → when (System.nanoTime) their deadline passes here. */
  private final Map<String, Long> outstanding = new HashMap<>();
  private int window;
  /** The push fetch on its way, if any. */
  private PollService.Poll fetch;
  private long checkTimer = -1;
  /** When (System.nanoTime) the armed check timer fires. */
  private long checkTimerAt;
  private long checkMs = FIRST_CHECK_MS;
  /** A still-out check on its way, and whether a settlement was told meanwhile. */
  private boolean checking;
  private boolean toldWhileChecking;
  /** When (System.nanoTime) the last check began. */
  private long checkedAt = System.nanoTime() - TOLD_GAP_MS * 1_000_000;
  /** Ends the watch of {@link FullWindows} while the window is full; null while it is not. */
  private Runnable unwatch;
  private long deadlineTimer = -1;
  /** When (System.nanoTime) the armed deadline timer fires. */
  private long deadlineTimerAt;
  private boolean stopped;

  /** @param blocked told the ms left when a fetch finds the consumer blocked by its rate limit */
  PushStream(Vertx vertx, ConsumerSettings consumer, PollService poller, Consumer<Buffer> push,
      BooleanSupplier writable, LongConsumer blocked) {
    this.vertx = vertx;
    this.consumer = consumer;
    this.poller = poller;
    this.push = push;
    this.writable = writable;
    this.blocked = blocked;
  }

  void start(int window) {
    stopped = false;
    this.window = window;
    fetch();
  }

  /** Stops pushing; deliveries polled over the socket still pass their deadlines here (see close). */
  void stop() {
    window = 0;
    stopped = true;
    if (fetch != null) {
      PollService.Poll stopping = fetch;
      fetch = null;
      stopping.stop();
    }
    vertx.cancelTimer(checkTimer);
    checkTimer = -1;
    unwatch();
  }

  private void unwatch() {
    if (unwatch != null) {
      unwatch.run();
      unwatch = null;
    }
  }

  /** The socket closed: nothing is watched any longer. */
  void close() {
    stop();
    vertx.cancelTimer(deadlineTimer);
    deadlineTimer = -1;
  }

  /** The deliveries pushed over this socket that are still unacked and within their deadline. */
  List<String> unacked() {
    long now = System.nanoTime();
    List<String> unacked = new ArrayList<>();
    outstanding.forEach((ackId, passesAt) -> {
      if (passesAt - now > 0) {
        unacked.add(ackId);
      }
    });
    return unacked;
  }

  /** Deliveries of this socket that were acked (whatever the outcome) leave the window. */
  void settled(JsonArray results) {
    boolean freed = false;
    for (Object row : results) {
      String ackId = ((JsonObject) row).getString("ackId");
      freed |= ackId != null && outstanding.remove(ackId) != null;
    }
    if (freed) {
      checkMs = FIRST_CHECK_MS;
      fetch();
    }
  }

  /** Call when the socket's write queue drained. */
  void drained() {
    fetch();
  }

  private void fetch() {
    int room = window - outstanding.size();
    if (room <= 0 && !stopped) {
      if (unwatch == null) {
        unwatch = poller.windows().watch(consumer.name(), this::told);
      }
      checkLater();
    } else {
      unwatch();
    }
    if (fetch != null || room <= 0 || !writable.getAsBoolean() || stopped) {
      return;
    }
    // push fetches are not poll requests of the client: they do not count against its rate limit
    PollService.Poll poll = poller.poll(consumer, Math.min(room, consumer.maxPollRecords()), FETCH_WAIT_MS, false, "ws");
    fetch = poll;
    poll.answer().onComplete(done -> {
      if (fetch != poll) {
        return; // stopped meanwhile
      }
      fetch = null;
      if (done.succeeded()) {
        deliver(done.result());
        fetch();
      } else if (done.cause() instanceof ApiException refused && refused.code() == ErrorCode.TOO_MANY_REQUESTS) {
        blocked.accept(refused.retryAfterMs());
      } else if (done.cause() instanceof ApiException refused && refused.code() == ErrorCode.NODE_SHUTTING_DOWN) {
        // the node drains: no more pushes; the socket closes with 1001 once it has
      } else if (!stopped) {
        // Redis trouble: try again a little later rather than spin
        vertx.setTimer(500, t -> fetch());
      }
    });
  }

  /** While the window is full: asks Redis which deliveries are still out, at growing intervals. */
  private void checkLater() {
    if (checkTimer >= 0 || checking) {
      return;
    }
    armCheck(checkMs);
  }

  private void armCheck(long delayMs) {
    checkTimerAt = System.nanoTime() + delayMs * 1_000_000;
    checkTimer = vertx.setTimer(delayMs, t -> {
      checkTimer = -1;
      check();
    });
  }

  /** A delivery of the consumer was settled by another path: the full window checks now. */
  private void told() {
    if (stopped || outstanding.size() < window) {
      return;
    }
    if (checking) {
      toldWhileChecking = true;
      return;
    }
    long waitMs = TOLD_GAP_MS - (System.nanoTime() - checkedAt) / 1_000_000;
    if (waitMs > 0 && checkTimer >= 0 && checkTimerAt - System.nanoTime() <= waitMs * 1_000_000) {
      return; // the check due anyway comes as soon
    }
    vertx.cancelTimer(checkTimer);
    checkTimer = -1;
    if (waitMs > 0) {
      armCheck(waitMs);
    } else {
      check();
    }
  }

  private void check() {
    List<String> held = List.copyOf(outstanding.keySet());
    if (held.isEmpty() || stopped) {
      return;
    }
    checking = true;
    checkedAt = System.nanoTime();
    checkMs = Math.min(checkMs * 2, MAX_CHECK_MS);
    // told of settlements until a while after the next check, which files it again
    poller.stillOut(consumer, held, checkMs + MAX_CHECK_MS).onComplete(done -> {
      checking = false;
      Set<String> asked = new HashSet<>(held);
      Set<String> out = done.succeeded() ? new HashSet<>(done.result()) : asked;
      if (outstanding.keySet().removeIf(ackId -> asked.contains(ackId) && !out.contains(ackId))) {
        checkMs = FIRST_CHECK_MS;
      }
      fetch(); // checks again later while still full
      if (toldWhileChecking) {
        toldWhileChecking = false;
        told();
      }
    });
  }

  private void deliver(Batch batch) {
    if (batch.size() == 0) {
      return;
    }
    track(batch);
    push.accept(batch.json());
  }

  /** Counts a batch handed to this socket (pushed or polled) in its window until acked or due. */
  void track(Batch batch) {
    // the deadline is ackTimeoutMs after the hand-out by Redis' clock; measured here from now,
    // the window reopens a little after it, never before
    holdUntilDeadline(batch.ackIds(), consumer.ackTimeoutMs());
  }

  /** Deliveries of this socket that were extended stay in the window until their new deadline. */
  void extended(JsonArray results, long extendMs) {
    List<String> ackIds = new ArrayList<>();
    for (Object row : results) {
      JsonObject result = (JsonObject) row;
      if ("EXTENDED".equals(result.getString("status")) && outstanding.containsKey(result.getString("ackId"))) {
        ackIds.add(result.getString("ackId"));
      }
    }
    holdUntilDeadline(ackIds, extendMs);
  }

  private void holdUntilDeadline(List<String> ackIds, long deadlineInMs) {
    if (ackIds.isEmpty()) {
      return;
    }
    long passesAt = System.nanoTime() + deadlineInMs * 1_000_000;
    ackIds.forEach(ackId -> outstanding.put(ackId, passesAt));
    watchDeadline(passesAt);
  }

  /** Arms the deadline timer to fire after {@code passesAt}, unless it fires soon enough after it already. */
  private void watchDeadline(long passesAt) {
    long firesAt = passesAt + DEADLINE_GRAIN_MS * 1_000_000;
    if (deadlineTimer >= 0 && deadlineTimerAt - firesAt <= 0) {
      return; // it fires first and arms again for what is left
    }
    vertx.cancelTimer(deadlineTimer);
    deadlineTimerAt = firesAt;
    long delayMs = Math.max(1, (firesAt - System.nanoTime()) / 1_000_000);
    deadlineTimer = vertx.setTimer(delayMs, t -> {
      deadlineTimer = -1;
      dropPassed();
    });
  }

  /** Deliveries whose deadline passed leave the window; the timer is armed for the earliest left. */
  private void dropPassed() {
    long now = System.nanoTime();
    long earliest = 0;
    boolean freed = false;
    for (var entries = outstanding.values().iterator(); entries.hasNext(); ) {
      long passesAt = entries.next();
      if (passesAt - now <= 0) {
        entries.remove();
        freed = true;
      } else if (earliest == 0 || passesAt - earliest < 0) {
        earliest = passesAt; // (a nanoTime of exactly 0 only costs an early look)
      }
    }
    if (!outstanding.isEmpty()) {
      watchDeadline(earliest);
    }
    if (freed) {
      fetch();
    }
  }
}
