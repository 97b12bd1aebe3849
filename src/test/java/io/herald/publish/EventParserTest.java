package io.herald.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.buffer.Buffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class EventParserTest {

  private static List<PublishedEvent> parse(String body) {
    return EventParser.parse(Buffer.buffer(body));
  }

  private static String invalidField(String body) {
    ApiException e = assertThrows(ApiException.class, () -> parse(body));
    assertEquals(ErrorCode.INVALID_REQUEST, e.code());
    return e.details().getString("field");
  }

  @Test
  @DisplayName("payloads are kept as the exact bytes the publisher sent")
  void keepsPayloadBytes() {
    List<PublishedEvent> events = parse("{\"events\":[{\"payload\": {\"b\" : 1.50, \"a\":[ 1 ,2]} },"
        + "{\"payload\":\"\\u00e9t\\u00e9\"},{\"payload\":-12.5e3},{\"payload\":null},{\"payload\":false}]}");
    assertEquals(List.of("{\"b\" : 1.50, \"a\":[ 1 ,2]}", "\"\\u00e9t\\u00e9\"", "-12.5e3", "null", "false"),
        events.stream().map(e -> e.payload().toString()).toList());
  }

  @Test
  @DisplayName("a single event carries key, headers and correlationId")
  void singleEvent() {
    PublishedEvent event = parse("{\"payload\":[1],\"key\":\"k\",\"headers\":{\"h\":\"v\"},\"correlationId\":\"c\"}").get(0);
    assertEquals("[1]", event.payload().toString());
    assertEquals("k", event.key());
    assertEquals(Map.of("h", "v"), event.headers());
    assertEquals("c", event.correlationId());
  }

  @Test
  @DisplayName("an event's size is measured on its JSON")
  void measuresEventSize() {
    String event = "{\"payload\":\"" + "x".repeat(100) + "\"}";
    assertEquals(event.length(), parse(event).get(0).size());
    assertEquals(event.length(), parse("{\"events\":[" + event + "]}").get(0).size());
  }

  @Test
  @DisplayName("malformed input names the offending field")
  void namesBadField() {
    assertEquals("body", invalidField("{\"payload\":"));
    assertEquals("body", invalidField("[1,2]"));
    assertEquals("payload", invalidField("{\"key\":\"k\"}"));
    assertEquals("events[1].payload", invalidField("{\"events\":[{\"payload\":1},{}]}"));
    assertEquals("events[0].colour", invalidField("{\"events\":[{\"payload\":1,\"colour\":2}]}"));
    assertEquals("key", invalidField("{\"payload\":1,\"key\":\"" + "k".repeat(257) + "\"}"));
    assertEquals("key", invalidField("{\"payload\":1,\"key\":5}"));
    assertEquals("headers.h", invalidField("{\"payload\":1,\"headers\":{\"h\":1}}"));
    assertEquals("events", invalidField("{\"events\":[]}"));
    assertEquals("events", invalidField("{\"events\":[{\"payload\":1}],\"key\":\"k\"}"));
    assertEquals("ttlMs", invalidField("{\"payload\":1,\"ttlMs\":999}"));
    assertEquals("events[0].ttlMs", invalidField("{\"events\":[{\"payload\":1,\"ttlMs\":\"1h\"}]}"));
    assertEquals("idempotencyKey", invalidField("{\"payload\":1,\"idempotencyKey\":\"" + "k".repeat(257) + "\"}"));
    assertEquals("idempotencyKey", invalidField("{\"payload\":1,\"idempotencyKey\":7}"));
  }

  @Test
  @DisplayName("at most 1000 events and 64 headers")
  void limits() {
    String event = "{\"payload\":1}";
    assertEquals(1000, parse("{\"events\":[" + String.join(",", java.util.Collections.nCopies(1000, event)) + "]}").size());
    assertEquals("events", invalidField("{\"events\":[" + String.join(",", java.util.Collections.nCopies(1001, event)) + "]}"));
    StringBuilder headers = new StringBuilder();
    for (int i = 0; i < 65; i++) {
      headers.append(i == 0 ? "" : ",").append("\"h").append(i).append("\":\"v\"");
    }
    assertEquals("headers", invalidField("{\"payload\":1,\"headers\":{" + headers + "}}"));
    assertNull(parse("{\"payload\":1,\"key\":null}").get(0).key());
  }

  @Test
  @DisplayName("deliverAt and delayMs: either one, an integer in range; both together name delayMs")
  void delays() {
    assertEquals(1_764_400_060_000L, parse("{\"payload\":1,\"deliverAt\":1764400060000}").get(0).delay().deliverAt(0));
    assertEquals(1_060_000L, parse("{\"payload\":1,\"delayMs\":60000}").get(0).delay().deliverAt(1_000_000));
    assertEquals(1_000_000L, parse("{\"payload\":1,\"delayMs\":0}").get(0).delay().deliverAt(1_000_000));
    assertNull(parse("{\"payload\":1}").get(0).delay());
    assertNull(parse("{\"payload\":1,\"deliverAt\":null}").get(0).delay());
    assertEquals("delayMs", invalidField("{\"payload\":1,\"deliverAt\":1764400060000,\"delayMs\":5}"));
    assertEquals("delayMs", invalidField("{\"payload\":1,\"delayMs\":-1}"));
    assertEquals("delayMs", invalidField("{\"payload\":1,\"delayMs\":2592000001}"));
    assertEquals("delayMs", invalidField("{\"payload\":1,\"delayMs\":\"60000\"}"));
    assertEquals("deliverAt", invalidField("{\"payload\":1,\"deliverAt\":-5}"));
    assertEquals("deliverAt", invalidField("{\"payload\":1,\"deliverAt\":1.5}"));
    assertEquals("events[1].deliverAt", invalidField("{\"events\":[{\"payload\":1},{\"payload\":2,\"deliverAt\":\"soon\"}]}"));
  }
}
