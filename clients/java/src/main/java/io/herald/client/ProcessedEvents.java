package io.herald.client;

import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Remembers the eventIds of the last {@code capacity} events a handler finished, so that a
 * redelivery of one of them (its ack was lost, or came after the deadline) is acked without running
 * the handler again. Memory is bounded: the oldest ids are forgotten first. It sees this process'
 * deliveries only; work that must happen once across processes needs idempotent side effects too.
 */
public final class ProcessedEvents {
  /** How long a delivery of an event that is still being handled here waits before it comes again. */
  private static final Duration BUSY_DELAY = Duration.ofSeconds(1);

  private final Map<String, Boolean> done;
  private final Set<String> running = new HashSet<>();

  public ProcessedEvents(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be positive");
    }
    this.done = new LinkedHashMap<>(16, 0.75f, false) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
        return size() > capacity;
      }
    };
  }

  /** {@code handler}, run at most once per event this process finished. */
  public EventHandler skipRepeats(EventHandler handler) {
    return delivery -> {
      String eventId = delivery.eventId();
      synchronized (this) {
        if (done.containsKey(eventId)) {
          return; // returning acks it
        }
        if (!running.add(eventId)) {
          // the same event on two deliveries at once (e.g. after a reconnect): settle this one later
          delivery.nack("already being processed", BUSY_DELAY);
          return;
        }
      }
      boolean finished = false;
      try {
        handler.handle(delivery);
        finished = true;
      } finally {
        synchronized (this) {
          running.remove(eventId);
          if (finished) {
            done.put(eventId, Boolean.TRUE);
          }
        }
      }
    };
  }

  /** Whether the event was finished here (and is still remembered). */
  public synchronized boolean contains(String eventId) {
    return done.containsKey(eventId);
  }
}
