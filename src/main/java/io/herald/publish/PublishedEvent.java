package io.herald.publish;

import io.vertx.core.buffer.Buffer;
import java.util.Map;

/**
 * One event of a publish request as the publisher sent it.
 *
 * @param payload the payload's JSON exactly as it arrived, never re-encoded
 * @param idempotencyKey the publisher's key for retrying safely: a repeat on the same topic within
 *                       the window is not spooled again, or null
 * @param ttlMs   how long the event may wait to be acked, or null (then retention, or the
 *                consumer's maxTtlMs, bounds it)
 * @param delay   when its first hand-out may be, or null for at once
 * @param size    bytes of the event's JSON, what the size limit is measured on
 */
public record PublishedEvent(Buffer payload, String key, Map<String, String> headers, String correlationId,
    String idempotencyKey, Long ttlMs, Delay delay, int size) {

  /** A publisher's {@code deliverAt} (epoch ms, Redis' clock) or {@code delayMs} (from the publish). */
  public record Delay(Long deliverAt, Long delayMs) {
    static Delay at(Long deliverAt) {
      return deliverAt == null ? null : new Delay(deliverAt, null);
    }

    static Delay after(long delayMs) {
      return new Delay(null, delayMs);
    }

    /** The earliest time of its first hand-out, for an event published at {@code publishedAt}. */
    long deliverAt(long publishedAt) {
      return deliverAt != null ? deliverAt : publishedAt + delayMs;
    }
  }
}
