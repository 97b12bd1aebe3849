package io.herald.protocol;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;

/**
 * Limits on the JSON clients send, beyond the body and frame sizes: nesting at most
 * {@link #MAX_DEPTH} deep (a deeper document would cost stack and time out of proportion to its
 * size), strings and numbers of bounded length. Every request body and WebSocket message is read
 * under them.
 */
public final class JsonLimits {
  /** Nesting levels a request may have, its envelope included. */
  public static final int MAX_DEPTH = 64;
  /** Digits a number may have. */
  private static final int MAX_NUMBER_LENGTH = 100;

  /** A parser factory enforcing the limits. */
  public static final JsonFactory FACTORY = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder()
          .maxNestingDepth(MAX_DEPTH)
          .maxNumberLength(MAX_NUMBER_LENGTH)
          .build())
      .build();

  private JsonLimits() {}

  /** Parses {@code json} as one JSON object within the limits; 400 INVALID_REQUEST naming {@code field} otherwise. */
  public static JsonObject object(Buffer json, String field) {
    byte[] bytes = json.getBytes();
    // the parser reads overlong forms as the characters they encode: {"batchAck\xC1\x89ds":[..]}
    // would be taken for batchAckIds
    Utf8.requireValid(bytes, field);
    check(bytes, field);
    try {
      return new JsonObject(json);
    } catch (DecodeException | ClassCastException e) {
      throw ApiException.invalid(field, "must be one JSON object");
    }
  }

  /**
   * {@code value} as a long when it was written as a JSON integer within {@code min..max}, else null.
   * A literal with a fraction or an exponent is refused even when its value is whole: {@code 1e999}
   * reads as infinity, which a double-based check would have taken for Long.MAX_VALUE.
   */
  public static Long integerIn(Object value, long min, long max) {
    if (value instanceof BigInteger big) {
      return big.bitLength() < Long.SIZE ? integerIn(big.longValue(), min, max) : null;
    }
    if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
      long exact = ((Number) value).longValue();
      return exact >= min && exact <= max ? exact : null;
    }
    return null;
  }

  /** Reads every token of {@code json}, failing on malformed JSON or broken limits. */
  private static void check(byte[] json, String field) {
    try (JsonParser parser = FACTORY.createParser(json)) {
      while (parser.nextToken() != null) {
        // the parser enforces the constraints as it goes
      }
    } catch (JsonProcessingException e) {
      throw ApiException.invalid(field, "must be one JSON object (" + e.getOriginalMessage() + ")");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
