package io.herald.protocol;

import java.util.regex.Pattern;

/** Topic and consumer name rules of the protocol. */
public final class TopicName {
  /** Topics under this first level are the gateway's own: clients may subscribe, never publish. */
  public static final String SYSTEM_LEVEL = "$sys";
  public static final int MAX_LEVELS = 16;
  private static final int MAX_LEVEL_LENGTH = 250;
  private static final String LEVEL_RULE = "each topic level is 1..250 characters of A-Z a-z 0-9 . _ -";
  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,128}");

  private TopicName() {}

  /**
   * Null when {@code topic} is a valid topic a client may publish to, else why not. Checked per
   * publish, so by hand: a split and a regular expression per level were 5% of a publishing node's
   * event-loop time.
   */
  public static String problem(String topic) {
    int levels = 1;
    for (int i = 0; i < topic.length(); i++) {
      levels += topic.charAt(i) == '/' ? 1 : 0;
    }
    if (levels > MAX_LEVELS) {
      return "a topic has at most " + MAX_LEVELS + " levels";
    }
    int levelStart = 0;
    for (int i = 0; i <= topic.length(); i++) {
      if (i == topic.length() || topic.charAt(i) == '/') {
        int length = i - levelStart;
        if (length == 0) {
          return "'" + topic + "' has an empty level";
        }
        if (length > MAX_LEVEL_LENGTH) {
          return LEVEL_RULE;
        }
        levelStart = i + 1;
      } else if (!isLevelCharacter(topic.charAt(i))) {
        return LEVEL_RULE;
      }
    }
    return null;
  }

  private static boolean isLevelCharacter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  }

  public static boolean isSystem(String topic) {
    return topic.startsWith(SYSTEM_LEVEL + "/");
  }

  public static boolean isValidLevel(String level) {
    if (level.isEmpty() || level.length() > MAX_LEVEL_LENGTH) {
      return false;
    }
    for (int i = 0; i < level.length(); i++) {
      if (!isLevelCharacter(level.charAt(i))) {
        return false;
      }
    }
    return true;
  }

  public static boolean isValidConsumer(String name) {
    return name != null && CONSUMER.matcher(name).matches();
  }
}
