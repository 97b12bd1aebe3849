package io.herald.topic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.protocol.TopicName;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class TopicPatternTest {

  @Test
  @DisplayName("'*' matches exactly one level")
  void starMatchesOneLevel() {
    TopicPattern pattern = TopicPattern.parse("orders/*/created");
    assertTrue(pattern.matches("orders/eu/created"));
    assertFalse(pattern.matches("orders/created"));
    assertFalse(pattern.matches("orders/eu/de/created"));
  }

  @Test
  @DisplayName("'>' as the last level matches one or more levels")
  void gtMatchesOneOrMoreLevels() {
    TopicPattern pattern = TopicPattern.parse("orders/>");
    assertTrue(pattern.matches("orders/eu"));
    assertTrue(pattern.matches("orders/eu/de/created"));
    assertFalse(pattern.matches("orders"));
    assertFalse(pattern.matches("invoices/eu"));
  }

  @Test
  @DisplayName("a literal pattern matches only that topic")
  void literalMatchesItself() {
    assertTrue(TopicPattern.parse("a/b").matches("a/b"));
    assertFalse(TopicPattern.parse("a/b").matches("a/b/c"));
    assertFalse(TopicPattern.parse("a/b").matches("a"));
  }

  @Test
  @DisplayName("$sys topics are reached only by patterns that name $sys")
  void systemTopicsNeedExplicitPattern() {
    assertFalse(TopicPattern.parse(">").matches("$sys/alerts/unacked"));
    assertFalse(TopicPattern.parse("*/alerts/unacked").matches("$sys/alerts/unacked"));
    assertTrue(TopicPattern.parse("$sys/>").matches("$sys/alerts/unacked"));
  }

  @Test
  @DisplayName("bad patterns are refused with a reason")
  void badPatternsRefused() {
    assertThrows(IllegalArgumentException.class, () -> TopicPattern.parse("a/>/b"));
    assertThrows(IllegalArgumentException.class, () -> TopicPattern.parse("a//b"));
    assertThrows(IllegalArgumentException.class, () -> TopicPattern.parse("a/b c"));
    assertThrows(IllegalArgumentException.class, () -> TopicPattern.parse("a/" + "x/".repeat(16) + "y"));
  }

  @Test
  @DisplayName("topic names follow the protocol's level rules")
  void topicNames() {
    assertNull(TopicName.problem("orders/eu/created"));
    assertNull(TopicName.problem("a.b_c-D9"));
    assertNotNull(TopicName.problem("orders//created"));
    assertNotNull(TopicName.problem("orders/*"));
    assertNotNull(TopicName.problem("x".repeat(251)));
    assertNull(TopicName.problem("x".repeat(250)));
    assertNotNull(TopicName.problem("a/".repeat(16) + "b"));
    assertEquals(true, TopicName.isValidConsumer("billing-2.eu_x"));
    assertEquals(false, TopicName.isValidConsumer("bill ing"));
  }
}
