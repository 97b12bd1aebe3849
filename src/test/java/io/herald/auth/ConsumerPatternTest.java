package io.herald.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class ConsumerPatternTest {

  @Test
  @DisplayName("a consume grant is a name, a name's start followed by *, or * alone")
  void grants() {
    assertTrue(ConsumerPattern.parse("billing").matches("billing"));
    assertFalse(ConsumerPattern.parse("billing").matches("billing-eu"));
    assertTrue(ConsumerPattern.parse("billing-*").matches("billing-eu"));
    assertTrue(ConsumerPattern.parse("billing-*").matches("billing-"));
    assertFalse(ConsumerPattern.parse("billing-*").matches("billing"));
    assertFalse(ConsumerPattern.parse("billing-*").matches("audit"));
    assertTrue(ConsumerPattern.parse("*").matches("anything.at_all-1"));
    assertEquals("billing-*", ConsumerPattern.parse("billing-*").toString());
    for (String bad : List.of("", "bill*ing", "**", "a b", "x".repeat(129) + "*")) {
      assertThrows(IllegalArgumentException.class, () -> ConsumerPattern.parse(bad), bad);
    }
  }

  @Test
  @DisplayName("a caller may consume from the consumers its grants match, and gets CONSUME_ACL_DENIED naming any other")
  void callerChecks() {
    Caller fleet = new Caller("fleet", List.of(), List.of(ConsumerPattern.parse("billing-*"), ConsumerPattern.parse("audit")), false, null);
    fleet.checkConsume("billing-eu");
    fleet.checkConsume("audit");
    ApiException denied = assertThrows(ApiException.class, () -> fleet.checkConsume("payments"));
    assertEquals(ErrorCode.CONSUME_ACL_DENIED, denied.code());
    assertEquals("payments", denied.details().getString("consumer"));
    new Caller("operator", List.of(), List.of(ConsumerPattern.parse("*")), true, null).checkConsume("payments");
  }
}
