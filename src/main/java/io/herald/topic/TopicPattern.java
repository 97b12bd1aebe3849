package io.herald.topic;

import io.herald.protocol.TopicName;

/**
 * A subscription pattern: {@code *} matches exactly one level, {@code >} as the last level matches
 * one or more. Wildcards in the first level do not match the gateway's own {@code $sys} topics,
 * which only a pattern naming {@code $sys} receives.
 */
public final class TopicPattern {
  private final String text;
  private final String[] levels;

  private TopicPattern(String text) {
    this.text = text;
    this.levels = text.split("/", -1);
  }

  /** The pattern, or an exception saying what is wrong with it. */
  public static TopicPattern parse(String text) {
    String[] levels = text.split("/", -1);
    if (levels.length > TopicName.MAX_LEVELS) {
      throw new IllegalArgumentException("a pattern has at most " + TopicName.MAX_LEVELS + " levels");
    }
    for (int i = 0; i < levels.length; i++) {
      String level = levels[i];
      boolean ok = TopicName.isValidLevel(level) || level.equals("*")
          || (level.equals(">") && i == levels.length - 1)
          || (level.equals(TopicName.SYSTEM_LEVEL) && i == 0);
      if (!ok) {
        throw new IllegalArgumentException("pattern levels are names, '*', or '>' as the last level");
      }
    }
    return new TopicPattern(text);
  }

  public boolean matches(String topic) {
    String[] topicLevels = topic.split("/", -1);
    if (TopicName.isSystem(topic) && !levels[0].equals(TopicName.SYSTEM_LEVEL)) {
      return false;
    }
    for (int i = 0; i < levels.length; i++) {
      String level = levels[i];
      if (level.equals(">")) {
        return topicLevels.length > i;
      }
      if (i >= topicLevels.length || !(level.equals("*") || level.equals(topicLevels[i]))) {
        return false;
      }
    }
    return topicLevels.length == levels.length;
  }

  @Override
  public String toString() {
    return text;
  }
}
