package io.herald.store;

/** Redis could not do what was asked. {@link #sent()} tells whether the command may have run. */
public final class StoreException extends RuntimeException {
  private final boolean sent;

  StoreException(String message, boolean sent, Throwable cause) {
    super(message, cause, false, false);
    this.sent = sent;
  }

  /** False: Redis was not reached, nothing was written. True: the outcome is unknown. */
  public boolean sent() {
    return sent;
  }
}
