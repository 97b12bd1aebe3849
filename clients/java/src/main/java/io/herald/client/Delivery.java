package io.herald.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One hand-out of an event to this subscriber. A handler may settle it itself ({@link #ack},
 * {@link #nack}, {@link #reject}); if it returns without doing so the subscriber acks it, and if it
 * throws the subscriber nacks it (to come again after the consumer's backoff). Only the first
 * settlement counts.
 */
public final class Delivery {
  private final JsonNode event;
  private final Settlements settlements;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile boolean acked;

  Delivery(JsonNode event, Settlements settlements) {
    this.event = event;
    this.settlements = settlements;
  }

  /** What a subscriber does with a delivery once it is settled. */
  interface Settlements {
    void ack(Delivery delivery);

    void nack(Delivery delivery, String action, Duration delay, String reason);
  }

  public String eventId() {
    return event.path("eventId").asText();
  }

  public String topic() {
    return event.path("topic").asText();
  }

  /** The event's key, or null. */
  public String key() {
    return event.path("key").textValue();
  }

  public Map<String, String> headers() {
    Map<String, String> headers = new LinkedHashMap<>();
    event.path("headers").properties().forEach(header -> headers.put(header.getKey(), header.getValue().asText()));
    return headers;
  }

  /** The payload as published (a JSON null when it was null). */
  public JsonNode payload() {
    return event.path("payload");
  }

  /** The payload read as {@code type}. */
  public <T> T payload(Class<T> type) {
    try {
      return Json.MAPPER.treeToValue(payload(), type);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("the payload of " + eventId() + " is no " + type.getSimpleName(), e);
    }
  }

  public Instant publishedAt() {
    return Instant.ofEpochMilli(event.path("publishedAt").asLong());
  }

  /** 1 on the first hand-out; more when the event comes again. */
  public int deliveryCount() {
    return event.path("deliveryCount").asInt(1);
  }

  /** This hand-out's ackId (null for a consumer with {@code ackMode: auto}). */
  public String ackId() {
    return event.path("ackId").textValue();
  }

  /** Acks it: it will not come again. */
  public void ack() {
    if (settle()) {
      acked = true;
      settlements.ack(this);
    }
  }

  /** Nacks it to come again after the consumer's redelivery backoff (a delay of its own when given). */
  public void nack(String reason) {
    nack(reason, null);
  }

  /** As {@link #nack(String)}, coming again after {@code delay} (0..24 h) instead of the consumer's backoff. */
  public void nack(String reason, Duration delay) {
    if (delay != null && (delay.isNegative() || delay.toMillis() > 86_400_000)) {
      throw new IllegalArgumentException("a nack's delay is 0..24 h, not " + delay);
    }
    if (settle()) {
      settlements.nack(this, "REQUEUE", delay, reason);
    }
  }

  /** Sends it to the consumer's error queue: it will not come again. */
  public void reject(String reason) {
    if (settle()) {
      settlements.nack(this, "REJECT", null, reason);
    }
  }

  /** Whether it was acked, nacked or rejected already. */
  public boolean isSettled() {
    return settled.get();
  }

  /** Whether it was settled by an ack. */
  boolean wasAcked() {
    return acked;
  }

  private boolean settle() {
    return settled.compareAndSet(false, true) && ackId() != null;
  }

  @Override
  public String toString() {
    return "Delivery[" + eventId() + " on " + topic() + ", delivery " + deliveryCount() + "]";
  }
}
