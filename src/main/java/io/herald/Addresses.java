package io.herald;

/** Event-bus addresses the verticles talk over. */
public final class Addresses {
  /** Published (to every verticle of the node): a consumer name, or "*" for all, that may have events. */
  public static final String WAKE = "herald.wake";
  /** Point-to-point: ack requests for the ack tracker. */
  public static final String ACKS = "herald.acks";

  private Addresses() {}
}
