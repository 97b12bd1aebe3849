package io.herald;

/** Event-bus addresses the verticles talk over. */
public final class Addresses {
  /** Published to every verticle of the node: wake every long poll, wake-ups may have been missed. */
  public static final String WAKE_ALL = "herald.wake";
  /** Published to every verticle of the node: "consumer blockMs", a consumer went over its rate limit. */
  public static final String BLOCKED = "herald.blocked";
  /** Point-to-point: ack requests for the ack tracker. */
  public static final String ACKS = "herald.acks";
  /**
   * Published to the node's scheduler: [shard, time], a due time (Redis time) was filed in that
   * shard of the due index, which may be earlier than the scheduler's next tick of it.
   */
  public static final String DUE_FILED = "herald.due.filed";
  /** Point-to-point: {"topic", "payload"} of an alert to publish on a $sys topic. */
  public static final String ALERTS = "herald.alerts";
  /** Published to the node's HTTP verticles: every consumer's figures as JSON, for the consoles' live streams. */
  public static final String CONSOLE_FIGURES = "herald.console.figures";

  private Addresses() {}

  /** Point-to-point: wake-ups ("waiterId consumer") for the long polls of one verticle instance. */
  public static String wake(String waiterPrefix) {
    return WAKE_ALL + "." + waiterPrefix;
  }
}
