package io.herald.store;

/**
 * Redis could not do what was asked. {@link #sent()} tells whether the command may have run;
 * {@link #failedInRedis()} that Redis ran it and answered with an error (a bug of ours, not an
 * outage: the connection is fine).
 */
public final class StoreException extends RuntimeException {
  private final boolean sent;
  private final boolean failedInRedis;

  StoreException(String message, boolean sent, Throwable cause) {
    this(message, sent, false, cause);
  }

  StoreException(String message, boolean sent, boolean failedInRedis, Throwable cause) {
    super(message, cause, false, false);
    this.sent = sent;
    this.failedInRedis = failedInRedis;
  }

  public boolean failedInRedis() {
    return failedInRedis;
  }

  /** False: Redis was not reached, nothing was written. True: the outcome is unknown. */
  public boolean sent() {
    return sent;
  }
}
