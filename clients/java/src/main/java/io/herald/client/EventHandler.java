package io.herald.client;

/**
 * Processes one delivery, on one of the subscriber's worker threads (never on an I/O thread). It may
 * take longer than the consumer's ack timeout: the subscriber extends the deadline while it runs.
 */
@FunctionalInterface
public interface EventHandler {
  /**
   * Returns normally to have the delivery acked (unless it was settled here), or throws to have it
   * nacked with the exception as its reason.
   */
  void handle(Delivery delivery) throws Exception;
}
