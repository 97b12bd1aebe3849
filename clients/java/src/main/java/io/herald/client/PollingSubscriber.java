package io.herald.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A subscriber by HTTP long polling, for where WebSockets are not allowed: one thread polls for as
 * many events as the window has room for; settlements are HTTP calls (as every subscriber's are
 * while it has no socket). A 429 waits out its {@code Retry-After}; a 503 or a lost connection waits
 * a jittered backoff and polls the next node.
 */
final class PollingSubscriber extends AbstractSubscriber {
  private static final int MAX_EVENTS_PER_POLL = 1000;
  private final Object room = new Object();
  private Thread poller;

  PollingSubscriber(Gateway gateway, String consumer, EventHandler handler, SubscriberSettings settings,
      ScheduledExecutorService timers) {
    super(gateway, consumer, handler, settings, timers);
  }

  @Override
  protected void begin() {
    poller = new Thread(this::pollLoop, "herald-" + consumer + "-poller");
    poller.setDaemon(true);
    poller.start();
  }

  private void pollLoop() {
    boolean failing = true;
    while (!closing) {
      try {
        int free = awaitRoom();
        if (closing) {
          return;
        }
        ObjectNode body = Json.object().put("maxEvents", Math.min(free, MAX_EVENTS_PER_POLL))
            .put("waitMs", settings.pollWait().toMillis());
        Gateway.Answer answer;
        try {
          answer = gateway.post(path("/poll"), Json.encode(body), settings.pollWait().plusSeconds(10)).get();
        } catch (ExecutionException unreachable) {
          failing = true;
          Thread.sleep(backoff.nextMs());
          continue;
        }
        if (answer.ok()) {
          if (failing) {
            connections.incrementAndGet();
            failing = false;
          }
          backoff.reset();
          answer.body().path("events").forEach(this::dispatch);
        } else if (answer.status() == 429) {
          throttled.incrementAndGet();
          Thread.sleep(Math.max(answer.retryAfterMs(), backoff.nextMs()));
        } else if (answer.status() >= 500) {
          // 503 (the gateway moved on to the next node), or a proxy's 502/504: transient
          failing = true;
          Thread.sleep(backoff.nextMs());
        } else {
          stop(answer.refusal());
          return;
        }
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Waits until fewer than {@code window} deliveries are unsettled; returns the room. */
  private int awaitRoom() throws InterruptedException {
    synchronized (room) {
      while (!closing && unsettled() >= window()) {
        room.wait(1000);
      }
      return Math.max(1, window() - unsettled());
    }
  }

  @Override
  protected void settledOne() {
    synchronized (room) {
      room.notifyAll();
    }
  }

  @Override
  protected void end() {
    synchronized (room) {
      room.notifyAll();
    }
    // a long poll in progress is left to end: what it brings is nacked to come again at once
  }

  @Override
  protected void disconnect() {}
}
