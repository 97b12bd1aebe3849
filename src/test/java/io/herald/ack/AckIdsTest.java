package io.herald.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class AckIdsTest {
  private static final String SALT = "00112233445566778899aabbccddeeff";

  @Test
  @DisplayName("an ackId names its delivery: eventId, seq and the deliveries entry n:seq:mark")
  void readsWhatItMade() {
    String ackId = AckIds.make(SALT, "019a2b3c4d5e-0011223344556677", "42", "3", "0123456789abcdef");
    assertEquals(new AckIds.Delivery("019a2b3c4d5e-0011223344556677", "42", "3:42:0123456789abcdef", ""),
        AckIds.read(ackId, SALT));
    assertEquals(ackId, AckIds.ofEntry(SALT, "019a2b3c4d5e-0011223344556677", "3:42:0123456789abcdef"));
  }

  @Test
  @DisplayName("a hand-out's mark carries the event's size after the call's 16 hex digits")
  void sizeInTheMark() {
    String ackId = AckIds.make(SALT, "019a2b3c4d5e-00", "7", "1", AckIds.mark("0123456789abcdef", 388));
    assertEquals(new AckIds.Delivery("019a2b3c4d5e-00", "7", "1:7:0123456789abcdef388", "388"), AckIds.read(ackId, SALT));
  }

  @Test
  @DisplayName("the token is the one consumer.lib.lua's ack_token makes: the first 20 hex digits of SHA-1 of salt:eventId:seq:n:mark")
  void tokenAsTheScripts() {
    // redis-cli EVAL "return redis.sha1hex('s:e1:7:1:ab')" 0
    assertEquals("e1.7.1.ab.b961e8f3c45df120527c", AckIds.make("s", "e1", "7", "1", "ab"));
  }

  @Test
  @DisplayName("another salt, a changed part, a missing part or foreign characters: not an ackId of this consumer")
  void refusesAnythingElse() {
    String ackId = AckIds.make(SALT, "019a2b3c4d5e-00", "42", "1", "0123456789abcdef");
    assertNull(AckIds.read(ackId, "ffeeddccbbaa99887766554433221100"));
    assertNull(AckIds.read(ackId.replace(".42.", ".43."), SALT));
    assertNull(AckIds.read(ackId.substring(0, ackId.lastIndexOf('.')), SALT));
    assertNull(AckIds.read(ackId + ".x", SALT));
    assertNull(AckIds.read("", SALT));
    String dead = AckIds.make(SALT, "019a2b3c4d5e-00", "42", "dead", "0123456789abcdef");
    assertNull(AckIds.read(dead, SALT), "a dead-letter queue's ackId is not a hand-out's");
    String foreign = AckIds.make(SALT, "019a2b3c4d5e-0０", "42", "1", "0123456789abcdef");
    assertNull(AckIds.read(foreign, SALT));
  }
}
