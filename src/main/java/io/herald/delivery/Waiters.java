package io.herald.delivery;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;

/**
 * Long polls parked on one verticle instance, by consumer, and a per-consumer wake-up count.
 *
 * <p>A wake-up resumes one parked poll, the longest waiting: waking all of them for every publish
 * would make each publish cost a poll per waiting client. A poll that fills its whole batch passes
 * the wake-up on ({@link #wake}), so a large publish still reaches every waiting poll.
 *
 * <p>A poll reads the count before it asks Redis; if the count moved by the time the empty answer
 * came back, a wake-up raced with it and the poll asks again instead of parking. Event-loop confined.
 */
public final class Waiters {
  /** Wakes every parked poll of every consumer, e.g. after wake-ups may have been missed. */
  public static final String EVERYONE = "*";

  private final Map<String, Deque<Runnable>> parked = new HashMap<>();
  private final Map<String, Long> wakeUps = new HashMap<>();

  public long wakeUps(String consumer) {
    return wakeUps.getOrDefault(consumer, 0L);
  }

  /** Parks {@code onWake}; returns what un-parks it without running it. */
  public Runnable park(String consumer, Runnable onWake) {
    parked.computeIfAbsent(consumer, c -> new ArrayDeque<>()).add(onWake);
    return () -> {
      Deque<Runnable> queue = parked.get(consumer);
      if (queue != null && queue.remove(onWake) && queue.isEmpty()) {
        parked.remove(consumer);
      }
    };
  }

  /** Resumes the longest-waiting poll of {@code consumer}, or every parked poll for {@link #EVERYONE}. */
  public void wake(String consumer) {
    if (consumer.equals(EVERYONE)) {
      for (String name : new ArrayList<>(parked.keySet())) {
        Deque<Runnable> queue = parked.remove(name);
        wakeUps.merge(name, 1L, Long::sum);
        queue.forEach(Runnable::run);
      }
      return;
    }
    wakeUps.merge(consumer, 1L, Long::sum);
    Deque<Runnable> queue = parked.get(consumer);
    if (queue != null) {
      Runnable first = queue.poll();
      if (queue.isEmpty()) {
        parked.remove(consumer);
      }
      first.run();
    }
  }

  /** Forget wake-up counts of consumers nobody waits for, so the map stays small. */
  public void forgetIdle() {
    wakeUps.keySet().retainAll(parked.keySet());
  }
}
