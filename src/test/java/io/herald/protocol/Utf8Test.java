package io.herald.protocol;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class Utf8Test {

  private static byte[] bytes(int... values) {
    byte[] bytes = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      bytes[i] = (byte) values[i];
    }
    return bytes;
  }

  @Test
  @DisplayName("text of one- to four-byte characters passes, up to U+10FFFF")
  void validText() {
    assertDoesNotThrow(() -> Utf8.requireValid("{\"payload\":\"a é € 😀 \uFFFD\"}".getBytes(StandardCharsets.UTF_8), "body"));
    assertDoesNotThrow(() -> Utf8.requireValid(bytes(0xF4, 0x8F, 0xBF, 0xBF), "body"));
    assertDoesNotThrow(() -> Utf8.requireValid(bytes(0xED, 0x9F, 0xBF), "body"));
    assertDoesNotThrow(() -> Utf8.requireValid(new byte[0], "body"));
  }

  @Test
  @DisplayName("overlong forms, encoded surrogates, code points beyond U+10FFFF, stray and missing continuation bytes are refused, naming the field and the byte")
  void invalidText() {
    int[][] invalid = {
        {0xC0, 0x80}, {0xC1, 0xBF}, {0xE0, 0x80, 0x80}, {0xF0, 0x80, 0x80, 0x80}, // overlong
        {0xED, 0xA0, 0x80}, {0xED, 0xBF, 0xBF}, // surrogates
        {0xF4, 0x90, 0x80, 0x80}, {0xF5, 0x80, 0x80, 0x80}, {0xFF}, // beyond U+10FFFF, never UTF-8
        {0x80}, {0xE2, 0x82}, {0xE2, 0x28, 0xA1}, {0xF0, 0x9F, 0x98}, // stray, truncated, broken
    };
    for (int[] sequence : invalid) {
      byte[] body = new byte[sequence.length + 1];
      body[0] = 'x';
      System.arraycopy(bytes(sequence), 0, body, 1, sequence.length);
      ApiException e = assertThrows(ApiException.class, () -> Utf8.requireValid(body, "body"));
      assertEquals(ErrorCode.INVALID_REQUEST, e.code());
      assertEquals("body: is not valid UTF-8 (at byte 1)", e.getMessage(), Arrays.toString(sequence));
    }
  }
}
