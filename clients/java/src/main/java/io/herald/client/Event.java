package io.herald.client;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * An event to publish: a payload (anything Jackson writes as JSON, or null) and optional key,
 * headers, time to live, delay and ids. Every event carries an idempotencyKey (a random one unless
 * set), so that the publisher's retries store it once.
 */
public final class Event {
  private final Object payload;
  private String key;
  private final Map<String, String> headers = new LinkedHashMap<>();
  private Duration ttl;
  private Instant deliverAt;
  private Duration delay;
  private String correlationId;
  private String idempotencyKey;

  private Event(Object payload) {
    this.payload = payload;
  }

  /** An event with this payload (a String, a number, a Map, a record, a JsonNode, ... or null). */
  public static Event of(Object payload) {
    return new Event(payload);
  }

  /** Events with the same key are handed out one at a time, in order, to consumers with {@code ordering: key}. */
  public Event key(String key) {
    this.key = key;
    return this;
  }

  public Event header(String name, String value) {
    headers.put(Objects.requireNonNull(name), Objects.requireNonNull(value));
    return this;
  }

  /** Dropped (dead-lettered as TTL_EXPIRED) when not acked within this time. */
  public Event ttl(Duration ttl) {
    this.ttl = ttl;
    return this;
  }

  /** Handed out no earlier than this time (Redis' clock). */
  public Event deliverAt(Instant deliverAt) {
    this.deliverAt = deliverAt;
    this.delay = null;
    return this;
  }

  /** Handed out no earlier than this long after it is stored. */
  public Event delay(Duration delay) {
    this.delay = delay;
    this.deliverAt = null;
    return this;
  }

  /** The publisher's own id, echoed in the result and not delivered. */
  public Event correlationId(String correlationId) {
    this.correlationId = correlationId;
    return this;
  }

  /** The key that makes a publish safe to repeat; a random one is set when this is not called. */
  public Event idempotencyKey(String idempotencyKey) {
    this.idempotencyKey = idempotencyKey;
    return this;
  }

  /** The event's JSON, with its idempotencyKey or a new random one (the publisher's retries resend this text). */
  String toJson() {
    ObjectNode json = Json.object();
    json.set("payload", Json.MAPPER.valueToTree(payload));
    if (key != null) {
      json.put("key", key);
    }
    if (!headers.isEmpty()) {
      ObjectNode names = json.putObject("headers");
      headers.forEach(names::put);
    }
    if (ttl != null) {
      json.put("ttlMs", ttl.toMillis());
    }
    if (deliverAt != null) {
      json.put("deliverAt", deliverAt.toEpochMilli());
    }
    if (delay != null) {
      json.put("delayMs", delay.toMillis());
    }
    if (correlationId != null) {
      json.put("correlationId", correlationId);
    }
    json.put("idempotencyKey", idempotencyKey != null ? idempotencyKey : UUID.randomUUID().toString());
    return Json.encode(json);
  }
}
