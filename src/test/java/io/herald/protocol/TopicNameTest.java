package io.herald.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Collections;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TopicNameTest {
  private static final String LEVEL_RULE = "each topic level is 1..250 characters of A-Z a-z 0-9 . _ -";

  @Test
  @DisplayName("a topic is 1 to 16 levels of 1..250 characters of A-Z a-z 0-9 . _ -, joined by '/'")
  void validTopics() {
    assertNull(TopicName.problem("orders"));
    assertNull(TopicName.problem("Orders/EU-west_1/v2.0"));
    assertNull(TopicName.problem(String.join("/", Collections.nCopies(16, "a"))));
    assertNull(TopicName.problem("x".repeat(250) + "/y"));
  }

  @Test
  @DisplayName("each broken rule is named: the number of levels first, then empty levels, lengths and characters")
  void problems() {
    assertEquals("a topic has at most 16 levels", TopicName.problem(String.join("/", Collections.nCopies(17, "a"))));
    assertEquals("a topic has at most 16 levels", TopicName.problem("é/" + "a/".repeat(16) + "a"));
    assertEquals("'' has an empty level", TopicName.problem(""));
    assertEquals("'/orders' has an empty level", TopicName.problem("/orders"));
    assertEquals("'orders/' has an empty level", TopicName.problem("orders/"));
    assertEquals("'a//b' has an empty level", TopicName.problem("a//b"));
    assertEquals(LEVEL_RULE, TopicName.problem("x".repeat(251)));
    assertEquals(LEVEL_RULE, TopicName.problem("orders/é"));
    assertEquals(LEVEL_RULE, TopicName.problem("orders/a b"));
    assertEquals(LEVEL_RULE, TopicName.problem("orders/+"));
  }
}
