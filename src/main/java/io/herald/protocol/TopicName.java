package io.herald.protocol;

import java.util.regex.Pattern;

/** Topic and consumer name rules of the protocol. */
public final class TopicName {
  /** Topics under this first level are the gateway's own: clients may subscribe, never publish. */
  public static final String SYSTEM_LEVEL = "$sys";
  public static final int MAX_LEVELS = 16;
  private static final Pattern LEVEL = Pattern.compile("[A-Za-z0-9._-]{1,250}");
  private static final Pattern CONSUMER = Pattern.compile("[A-Za-z0-9._-]{1,128}");

  private TopicName() {}

  /** Null when {@code topic} is a valid topic a client may publish to, else why not. */
  public static String problem(String topic) {
    String[] levels = topic.split("/", -1);
    if (levels.length > MAX_LEVELS) {
      return "a topic has at most " + MAX_LEVELS + " levels";
    }
    for (String level : levels) {
      if (level.isEmpty()) {
        return "'" + topic + "' has an empty level";
      }
      if (!LEVEL.matcher(level).matches()) {
        return "each topic level is 1..250 characters of A-Z a-z 0-9 . _ -";
      }
    }
    return null;
  }

  public static boolean isSystem(String topic) {
    return topic.startsWith(SYSTEM_LEVEL + "/");
  }

  public static boolean isValidLevel(String level) {
    return LEVEL.matcher(level).matches();
  }

  public static boolean isValidConsumer(String name) {
    return name != null && CONSUMER.matcher(name).matches();
  }
}
