package io.herald.delivery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Long polls parked on one verticle instance, by consumer, and a per-consumer wake-up count. A poll
 * reads the count before it asks Redis; if the count moved by the time the empty answer came back,
 * a wake-up raced with it and the poll asks again instead of parking. Event-loop confined.
 */
public final class Waiters {
  /** Wakes every parked poll of every consumer, e.g. after wake-ups may have been missed. */
  public static final String EVERYONE = "*";

  private final Map<String, Set<Runnable>> parked = new HashMap<>();
  private final Map<String, Long> wakeUps = new HashMap<>();

  public long wakeUps(String consumer) {
    return wakeUps.getOrDefault(consumer, 0L);
  }

  /** Parks {@code onWake}; returns what un-parks it without running it. */
  public Runnable park(String consumer, Runnable onWake) {
    parked.computeIfAbsent(consumer, c -> new LinkedHashSet<>()).add(onWake);
    return () -> {
      Set<Runnable> set = parked.get(consumer);
      if (set != null && set.remove(onWake) && set.isEmpty()) {
        parked.remove(consumer);
      }
    };
  }

  public void wake(String consumer) {
    if (consumer.equals(EVERYONE)) {
      new ArrayList<>(parked.keySet()).forEach(this::wake);
      return;
    }
    wakeUps.merge(consumer, 1L, Long::sum);
    Set<Runnable> woken = parked.remove(consumer);
    if (woken != null) {
      woken.forEach(Runnable::run);
    }
  }

  /** Forget wake-up counts of consumers nobody waits for, so the map stays small. */
  public void forgetIdle() {
    wakeUps.keySet().retainAll(parked.keySet());
  }

  List<String> consumersWaiting() {
    return List.copyOf(parked.keySet());
  }
}
