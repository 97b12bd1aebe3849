package io.herald.protocol;

/**
 * A failure of a lower layer (the store, the settings) that knows what the client is to be told of
 * it, so that this package, which every other one uses, depends on none of them.
 */
public interface ClientFailure {
  /** @param wrote whether the failed call may have changed state */
  ApiException toApiException(boolean wrote);
}
