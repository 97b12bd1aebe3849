package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class HashSlotsTest {
  private static int slot(String key) {
    return HashSlots.of(key.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  @DisplayName("CRC16 is XMODEM's, and slots are Redis Cluster's (values from its specification and CLUSTER KEYSLOT)")
  void slotsAreRedisClusters() {
    byte[] check = "123456789".getBytes(StandardCharsets.UTF_8);
    assertEquals(0x31C3, HashSlots.crc16(check, 0, check.length));
    assertEquals(12182, slot("foo"));
    assertEquals(5061, slot("bar"));
  }

  @Test
  @DisplayName("a key's hash tag, the first {...} with something inside, decides its slot")
  void hashTags() {
    assertEquals(slot("user1000"), slot("{user1000}.following"));
    assertEquals(slot("herald:{c:billing}:meta"), slot("herald:{c:billing}:pending"));
    assertEquals(slot("c:billing"), slot("herald:{c:billing}:meta"));
    assertEquals(slot("{}foo"), HashSlots.crc16("{}foo".getBytes(StandardCharsets.UTF_8), 0, 5) & 16383, "an empty tag is no tag");
    assertEquals(slot("a{b}c{d}"), slot("b"), "the first tag only");
    assertEquals("c:billing", new String(HashSlots.tagOf("herald:{c:billing}:meta".getBytes(StandardCharsets.UTF_8)),
        StandardCharsets.UTF_8));
    assertEquals("herald:consumers", new String(HashSlots.tagOf("herald:consumers".getBytes(StandardCharsets.UTF_8)),
        StandardCharsets.UTF_8));
  }
}
