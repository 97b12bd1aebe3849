package io.herald.protocol;

/**
 * Strict UTF-8 (RFC 3629): what a publisher sends is stored and handed out byte for byte, and
 * WebSocket text frames must be valid UTF-8 (RFC 6455 8.1: a client fails the connection
 * otherwise), so overlong forms, encoded surrogates and code points beyond U+10FFFF, which a JSON
 * parser may let through, are refused at the door.
 */
public final class Utf8 {
  private Utf8() {}

  /** Throws {@code 400 INVALID_REQUEST} naming {@code field} unless {@code bytes} are valid UTF-8. */
  public static void requireValid(byte[] bytes, String field) {
    int i = 0;
    int n = bytes.length;
    while (i < n) {
      int b = bytes[i];
      if (b >= 0) {
        i++;
        continue;
      }
      b &= 0xFF;
      int length;
      int low = 0x80;
      int high = 0xBF;
      if (b >= 0xC2 && b <= 0xDF) {
        length = 2;
      } else if (b >= 0xE0 && b <= 0xEF) {
        length = 3;
        if (b == 0xE0) {
          low = 0xA0; // not overlong
        } else if (b == 0xED) {
          high = 0x9F; // not a surrogate
        }
      } else if (b >= 0xF0 && b <= 0xF4) {
        length = 4;
        if (b == 0xF0) {
          low = 0x90; // not overlong
        } else if (b == 0xF4) {
          high = 0x8F; // not beyond U+10FFFF
        }
      } else {
        throw invalid(field, i);
      }
      if (i + length > n) {
        throw invalid(field, i);
      }
      int second = bytes[i + 1] & 0xFF;
      if (second < low || second > high) {
        throw invalid(field, i);
      }
      for (int k = 2; k < length; k++) {
        if ((bytes[i + k] & 0xC0) != 0x80) {
          throw invalid(field, i);
        }
      }
      i += length;
    }
  }

  private static ApiException invalid(String field, int offset) {
    return ApiException.invalid(field, "is not valid UTF-8 (at byte " + offset + ")");
  }
}
