package io.herald.client;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Remembers the eventIds of the last {@code capacity} events this process handled and acked, so that
 * a subscriber given it ({@link SubscriberSettings#withProcessedEvents}) acks a redelivery of one of
 * them (its ack was lost, or came after the deadline) without running the handler again. An event
 * counts as processed only once its handler returned and its {@link BeforeAck} succeeded. Memory is
 * bounded: the oldest ids are forgotten first. It sees this process' deliveries only; work that must
 * happen once across processes needs idempotent side effects too. One instance may serve several
 * subscribers: it keeps each consumer's events apart (an event matched by two consumers is processed
 * by each).
 */
public final class ProcessedEvents {
  /** What a delivery's eventId is to this process. */
  enum Claim {
    /** not seen: run the handler */
    NEW,
    /** handled and acked already: ack the repeat */
    DONE,
    /** being handled right now on another delivery: let this one come again later */
    BUSY
  }

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

  synchronized Claim claim(String consumer, String eventId) {
    String key = key(consumer, eventId);
    if (done.containsKey(key)) {
      return Claim.DONE;
    }
    return running.add(key) ? Claim.NEW : Claim.BUSY;
  }

  synchronized void release(String consumer, String eventId, boolean processed) {
    String key = key(consumer, eventId);
    running.remove(key);
    if (processed) {
      done.put(key, Boolean.TRUE);
    }
  }

  /** Whether the consumer's event was processed here (and is still remembered). */
  public synchronized boolean contains(String consumer, String eventId) {
    return done.containsKey(key(consumer, eventId));
  }

  private static String key(String consumer, String eventId) {
    // '/' is in neither a consumer's name nor an eventId
    return consumer + '/' + eventId;
  }
}
