package io.herald.publish;

import io.vertx.core.buffer.Buffer;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A parsed publish request: its events (payloads kept as sent) and, for a WebSocket frame, the
 * envelope fields around them.
 */
public record PublishRequest(Map<String, Object> envelope, List<PublishedEvent> events) {

  /** Parses {@code frame}, accepting {@code envelopeFields} beside the events; throws on bad input. */
  public static PublishRequest parse(Buffer frame, Set<String> envelopeFields) {
    return EventParser.parse(frame, envelopeFields);
  }

  public Object envelope(String field) {
    return envelope.get(field);
  }
}
