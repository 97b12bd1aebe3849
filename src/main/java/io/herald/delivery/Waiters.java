package io.herald.delivery;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The long polls of one verticle instance, by waiter id. A parked poll is also in its consumer's
 * waiters set in Redis, and a script that makes events available wakes exactly one of them, by id,
 * over the wake-up channel of the poll's node ({@code wake_waiter} in {@code wakeups.lib.lua}).
 *
 * <p>A wake-up may arrive before the answer of the script that parked the poll (pub/sub and replies
 * travel on different connections): it is kept, and the poll asks again instead of parking. A
 * wake-up for a poll that is gone is passed on to another poll of its consumer. Event-loop confined.
 */
public final class Waiters {
  private final String prefix;
  private final Consumer<String> passOn;
  private final Map<String, Waiter> open = new HashMap<>();
  private long lastId;

  /**
   * @param prefix "node/instance": where wake-ups for these polls are sent
   * @param passOn called with a consumer's name when a wake-up came for one of its polls that is gone
   */
  public Waiters(String prefix, Consumer<String> passOn) {
    this.prefix = prefix;
    this.passOn = passOn;
  }

  /** A new long poll; {@link Waiter#close() close} it when it is answered. */
  public Waiter open() {
    Waiter waiter = new Waiter(prefix + "/" + ++lastId);
    open.put(waiter.id, waiter);
    return waiter;
  }

  /** Handles a wake-up published by Redis: "waiterId consumer". */
  public void wake(String message) {
    int space = message.indexOf(' ');
    if (space < 0) {
      return;
    }
    Waiter waiter = open.get(message.substring(0, space));
    if (waiter == null) {
      passOn.accept(message.substring(space + 1));
    } else {
      waiter.wake();
    }
  }

  /** Wakes every poll, e.g. after wake-ups may have been missed. */
  public void wakeAll() {
    new ArrayList<>(open.values()).forEach(Waiter::wake);
  }

  /** One long poll through its attempts: parked between them, or asking Redis. */
  public final class Waiter {
    private final String id;
    private Runnable parked;
    private boolean woken;

    private Waiter(String id) {
      this.id = id;
    }

    /** The member naming this poll in its consumer's waiters set. */
    public String id() {
      return id;
    }

    /** Call as an attempt starts: a wake-up from now on means the attempt may have missed something. */
    public void attempting() {
      woken = false;
    }

    /**
     * Parks the poll until a wake-up, which runs {@code onWake}; if one came during the attempt,
     * runs it at once instead.
     */
    public void park(Runnable onWake) {
      if (woken) {
        onWake.run();
      } else {
        parked = onWake;
      }
    }

    /** Stops waiting for a wake-up without running anything. */
    public void unpark() {
      parked = null;
    }

    /** The poll is over: wake-ups for it are passed on from now on. */
    public void close() {
      parked = null;
      open.remove(id);
    }

    private void wake() {
      Runnable onWake = parked;
      parked = null;
      if (onWake == null) {
        woken = true;
      } else {
        onWake.run();
      }
    }
  }
}
