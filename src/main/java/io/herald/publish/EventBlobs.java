package io.herald.publish;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;

/** The stored form of events: their eventIds and the JSON members each delivery splices in. */
final class EventBlobs {
  private EventBlobs() {}

  /**
   * 12 hex digits of the publish time in ms, then 16 of the sequence its maker gave it
   * ({@link EventIds}): plain-text order is publish order, and the scripts read the publish time
   * back from the first 12 digits.
   */
  static String eventId(long publishedAt, long sequence) {
    return hex(publishedAt, 12) + "-" + hex(sequence, 16);
  }

  /** The publish time an eventId was made of. */
  static long publishedAt(String eventId) {
    return Long.parseLong(eventId.substring(0, 12), 16);
  }

  private static String hex(long value, int digits) {
    String text = Long.toHexString(value);
    return "0".repeat(Math.max(0, digits - text.length())) + text;
  }

  /** The event's members as delivered, with the payload spliced in as the publisher sent it. */
  static Buffer blob(String eventId, String topic, PublishedEvent event, long publishedAt) {
    String key = event.key() == null ? "null" : Json.encode(event.key());
    String headers = headers(event.headers());
    Buffer blob = Buffer.buffer(96 + eventId.length() + topic.length() + key.length() + headers.length()
        + event.payload().length());
    blob.appendString("\"eventId\":\"").appendString(eventId)
        .appendString("\",\"topic\":\"").appendString(topic)
        .appendString("\",\"key\":").appendString(key)
        .appendString(",\"headers\":").appendString(headers)
        .appendString(",\"payload\":").appendBuffer(event.payload())
        .appendString(",\"publishedAt\":").appendString(Long.toString(publishedAt));
    return blob;
  }

  private static String headers(Map<String, String> headers) {
    return headers.isEmpty() ? "{}" : new JsonObject(new LinkedHashMap<>(headers)).encode();
  }
}
