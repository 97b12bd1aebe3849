package io.herald.publish;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.herald.protocol.ApiException;
import io.herald.protocol.JsonLimits;
import io.herald.protocol.Utf8;
import io.vertx.core.buffer.Buffer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a publish body, one event or {@code {"events":[...]}}, with a streaming parser, so that each
 * payload is kept as the bytes the publisher sent. Anything malformed fails the whole request
 * naming the field.
 */
final class EventParser {
  static final long MIN_TTL_MS = 1_000;
  static final long MAX_TTL_MS = 2_592_000_000L;
  /** delayMs at most the longest retention a consumer may have. */
  static final long MAX_DELAY_MS = 2_592_000_000L;
  /** deliverAt at most the last ms of the year 9999. */
  static final long MAX_DELIVER_AT = 253_402_300_799_999L;
  static final int MAX_EVENTS = 1000;
  static final int MAX_HEADERS = 64;
  static final int MAX_STRING = 256;

  private final byte[] body;
  private final JsonParser parser;
  private final Set<String> envelopeFields;
  private final Map<String, Object> envelope = new HashMap<>();

  private EventParser(byte[] body, Set<String> envelopeFields) throws IOException {
    this.body = body;
    this.parser = JsonLimits.FACTORY.createParser(body);
    this.envelopeFields = envelopeFields;
  }

  static List<PublishedEvent> parse(Buffer body) {
    return parse(body, Set.of()).events();
  }

  /**
   * Parses a body that may also carry {@code envelopeFields} at its top level (scalars, e.g. the
   * {@code op}, {@code topic} and {@code requestId} of a WebSocket frame) besides the events.
   */
  static PublishRequest parse(Buffer body, Set<String> envelopeFields) {
    byte[] bytes = body.getBytes();
    // stored and handed out as sent: it must be text a WebSocket frame may carry
    Utf8.requireValid(bytes, "body");
    try {
      EventParser parser = new EventParser(bytes, envelopeFields);
      List<PublishedEvent> events = parser.request();
      return new PublishRequest(parser.envelope, events);
    } catch (JsonProcessingException e) {
      throw ApiException.invalid("body", "malformed JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private List<PublishedEvent> request() throws IOException {
    if (parser.nextToken() != JsonToken.START_OBJECT) {
      throw ApiException.invalid("body", "must be a JSON object: one event or {\"events\":[...]}");
    }
    int start = (int) parser.currentTokenLocation().getByteOffset();
    List<PublishedEvent> batch = null;
    EventFields single = new EventFields("");
    while (parser.nextToken() == JsonToken.FIELD_NAME) {
      String field = parser.currentName();
      parser.nextToken();
      if (field.equals("events")) {
        batch = events();
      } else if (envelopeFields.contains(field)) {
        envelope.put(field, scalar(field));
      } else {
        single.read(field);
      }
    }
    int end = (int) parser.currentLocation().getByteOffset();
    if (parser.nextToken() != null) {
      throw ApiException.invalid("body", "unexpected content after the JSON object");
    }
    if (batch != null) {
      if (single.any) {
        throw ApiException.invalid("events", "a batch has only the field 'events'");
      }
      return batch;
    }
    return List.of(single.build(end - start));
  }

  private Object scalar(String field) throws IOException {
    return switch (parser.currentToken()) {
      case VALUE_STRING -> parser.getText();
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> parser.getNumberValue();
      case VALUE_TRUE, VALUE_FALSE -> parser.getBooleanValue();
      case VALUE_NULL -> null;
      default -> throw ApiException.invalid(field, "must be a string or a number");
    };
  }

  private List<PublishedEvent> events() throws IOException {
    if (parser.currentToken() != JsonToken.START_ARRAY) {
      throw ApiException.invalid("events", "must be an array of events");
    }
    List<PublishedEvent> events = new ArrayList<>();
    while (parser.nextToken() != JsonToken.END_ARRAY) {
      String path = "events[" + events.size() + "]";
      if (events.size() == MAX_EVENTS) {
        throw ApiException.invalid("events", "at most " + MAX_EVENTS + " events per request");
      }
      if (parser.currentToken() != JsonToken.START_OBJECT) {
        throw ApiException.invalid(path, "must be an object");
      }
      int start = (int) parser.currentTokenLocation().getByteOffset();
      EventFields fields = new EventFields(path + ".");
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String field = parser.currentName();
        parser.nextToken();
        fields.read(field);
      }
      int end = (int) parser.currentLocation().getByteOffset();
      events.add(fields.build(end - start));
    }
    if (events.isEmpty()) {
      throw ApiException.invalid("events", "must hold at least one event");
    }
    return events;
  }

  /** The fields of one event, read from the parser positioned on each field's value. */
  private final class EventFields {
    private final String path;
    private boolean any;
    private Buffer payload;
    private String key;
    private String correlationId;
    private String idempotencyKey;
    private Long ttlMs;
    private Long deliverAt;
    private Long delayMs;
    private Map<String, String> headers = Map.of();

    EventFields(String path) {
      this.path = path;
    }

    void read(String field) throws IOException {
      any = true;
      switch (field) {
        case "payload" -> payload = rawValue();
        case "key" -> key = shortText(field);
        case "correlationId" -> correlationId = shortText(field);
        case "headers" -> headers = headers();
        case "ttlMs" -> ttlMs = integer(field, MIN_TTL_MS, MAX_TTL_MS);
        case "deliverAt" -> deliverAt = integer(field, 0, MAX_DELIVER_AT);
        case "delayMs" -> delayMs = integer(field, 0, MAX_DELAY_MS);
        case "idempotencyKey" -> idempotencyKey = shortText(field);
        default -> throw ApiException.invalid(path + field, "unknown event field");
      }
    }

    PublishedEvent build(int size) {
      if (payload == null) {
        throw ApiException.invalid(path + "payload", "is required (it may be null)");
      }
      if (deliverAt != null && delayMs != null) {
        throw ApiException.invalid(path + "delayMs", "give deliverAt or delayMs, not both");
      }
      return new PublishedEvent(payload, key, headers, correlationId, idempotencyKey, ttlMs,
          delayMs == null ? PublishedEvent.Delay.at(deliverAt) : PublishedEvent.Delay.after(delayMs), size);
    }

    private Buffer rawValue() throws IOException {
      int start = (int) parser.currentTokenLocation().getByteOffset();
      if (parser.currentToken().isStructStart()) {
        parser.skipChildren();
      } else {
        parser.finishToken();
      }
      int end = (int) parser.currentLocation().getByteOffset();
      return Buffer.buffer().appendBytes(body, start, end - start);
    }

    private Long integer(String field, long min, long max) throws IOException {
      JsonToken token = parser.currentToken();
      if (token == JsonToken.VALUE_NULL) {
        return null;
      }
      if (token == JsonToken.VALUE_NUMBER_INT && parser.getLongValue() >= min && parser.getLongValue() <= max) {
        return parser.getLongValue();
      }
      throw ApiException.invalid(path + field, "must be an integer in " + min + ".." + max);
    }

    private String shortText(String field) throws IOException {
      if (parser.currentToken() == JsonToken.VALUE_NULL) {
        return null;
      }
      if (parser.currentToken() != JsonToken.VALUE_STRING || parser.getText().length() > MAX_STRING) {
        throw ApiException.invalid(path + field, "must be a string of at most " + MAX_STRING + " characters");
      }
      return parser.getText();
    }

    private Map<String, String> headers() throws IOException {
      if (parser.currentToken() == JsonToken.VALUE_NULL) {
        return Map.of();
      }
      if (parser.currentToken() != JsonToken.START_OBJECT) {
        throw ApiException.invalid(path + "headers", "must be an object of string values");
      }
      Map<String, String> values = new LinkedHashMap<>();
      while (parser.nextToken() == JsonToken.FIELD_NAME) {
        String name = parser.currentName();
        if (parser.nextToken() != JsonToken.VALUE_STRING) {
          throw ApiException.invalid(path + "headers." + name, "header values are strings");
        }
        values.put(name, parser.getText());
        if (values.size() > MAX_HEADERS) {
          throw ApiException.invalid(path + "headers", "at most " + MAX_HEADERS + " headers");
        }
      }
      return values;
    }
  }
}
