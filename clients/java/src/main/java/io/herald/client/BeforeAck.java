package io.herald.client;

/**
 * Runs after a handler returned and before its delivery is acked, e.g. to commit the handler's work
 * (a database transaction, an offset) so that nothing is acked that is not durable. When it throws,
 * the delivery is nacked instead, to come again.
 */
@FunctionalInterface
public interface BeforeAck {
  void persist(Delivery delivery) throws Exception;
}
