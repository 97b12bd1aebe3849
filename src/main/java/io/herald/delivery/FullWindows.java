package io.herald.delivery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * The full push windows of one verticle instance's sockets, by consumer: told when a delivery of
 * their consumer was settled by another path than a socket (an HTTP ack or nack, on any node), so
 * that they ask at once which of theirs are still out rather than at their next check. The
 * instance is filed in Redis by those checks ({@code file_window} in wakeups.lib.lua) and told over
 * its node's wake channel. Event-loop confined.
 */
public final class FullWindows {
  private final String id;
  private final Map<String, Set<Runnable>> watching = new HashMap<>();

  /** @param prefix "node/instance": where wake-ups for this instance are sent */
  FullWindows(String prefix) {
    this.id = prefix + "/window";
  }

  /** How the instance is named in Redis, and in the messages that tell it. */
  public String id() {
    return id;
  }

  /** Runs {@code check} whenever a settlement of {@code consumer} is told, until the returned stop is run. */
  public Runnable watch(String consumer, Runnable check) {
    watching.computeIfAbsent(consumer, c -> new LinkedHashSet<>()).add(check);
    return () -> {
      Set<Runnable> checks = watching.get(consumer);
      if (checks != null && checks.remove(check) && checks.isEmpty()) {
        watching.remove(consumer);
      }
    };
  }

  /** Handles "id consumer" from Redis; false when the message is not for these windows. */
  boolean told(String message) {
    if (!message.startsWith(id + " ")) {
      return false;
    }
    Set<Runnable> checks = watching.get(message.substring(id.length() + 1));
    if (checks != null) {
      new ArrayList<>(checks).forEach(Runnable::run);
    }
    return true;
  }
}
