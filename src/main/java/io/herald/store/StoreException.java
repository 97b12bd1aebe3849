package io.herald.store;

import io.herald.protocol.ApiException;
import io.herald.protocol.ClientFailure;
import io.herald.protocol.ErrorCode;
import io.vertx.redis.client.Response;
import java.util.Optional;

/**
 * Redis could not do what was asked. {@link #sent()} tells whether the command may have run;
 * {@link #failedInRedis()} that Redis ran it and answered with an error (a bug of ours, not an
 * outage: the connection is fine).
 */
public final class StoreException extends RuntimeException implements ClientFailure {
  private static final System.Logger LOG = System.getLogger(StoreException.class.getName());
  private final boolean sent;
  private final boolean failedInRedis;
  /** The writes were done on the primary, but too few replicas confirmed them (redis.waitReplicas). */
  private final boolean unreplicated;
  /** When unreplicated: the call's reply, as the primary gave it. */
  private final Response written;

  StoreException(String message, boolean sent, Throwable cause) {
    this(message, sent, false, cause);
  }

  StoreException(String message, boolean sent, boolean failedInRedis, Throwable cause) {
    this(message, sent, failedInRedis, false, null, cause);
  }

  private StoreException(String message, boolean sent, boolean failedInRedis, boolean unreplicated, Response written,
      Throwable cause) {
    super(message, cause, false, false);
    this.sent = sent;
    this.failedInRedis = failedInRedis;
    this.unreplicated = unreplicated;
    this.written = written;
  }

  /**
   * Redis' WAIT after writes that were done ({@code written}: the call's reply) failed: whether
   * replicas took them is not known.
   */
  static StoreException unreplicated(Response written, Throwable waitFailure) {
    return new StoreException("Redis: the WAIT for replicas failed: " + waitFailure.getMessage(), true, false,
        true, written, waitFailure);
  }

  /** Redis' WAIT saw {@code acked} replicas take the writes ({@code written}: the call's reply), fewer than asked. */
  static StoreException unreplicated(Response written, int acked, ReplicaWait wait) {
    return new StoreException("Redis: " + acked + " of " + wait.replicas() + " replicas took the writes within "
        + wait.timeoutMs() + " ms", true, false, true, written, null);
  }

  /**
   * The reply of a call whose writes the primary did but too few replicas confirmed: what it
   * changed must be followed up like a confirmed call's (its next due time filed), though its
   * caller answers 503. Empty for any other failure.
   */
  public static Optional<Response> written(Throwable failure) {
    return failure instanceof StoreException store ? Optional.ofNullable(store.written) : Optional.empty();
  }

  /** Whether {@code failure} is a call the primary did, but too few replicas confirmed. */
  public static boolean unreplicated(Throwable failure) {
    return failure instanceof StoreException store && store.unreplicated;
  }

  public boolean failedInRedis() {
    return failedInRedis;
  }

  /** False: Redis was not reached, nothing was written. True: the outcome is unknown. */
  public boolean sent() {
    return sent;
  }

  /**
   * Redis unreachable: STORE_UNAVAILABLE; no answer after a write was sent: OUTCOME_UNKNOWN; a
   * script failing inside Redis (which keeps the writes it made before) is logged and answered
   * OUTCOME_UNKNOWN, or INTERNAL_ERROR for a read.
   */
  @Override
  public ApiException toApiException(boolean wrote) {
    if (failedInRedis) {
      LOG.log(System.Logger.Level.ERROR, "A Redis command failed inside Redis: " + getMessage());
      return wrote
          ? new ApiException(ErrorCode.OUTCOME_UNKNOWN, "The request failed part-way in Redis: it may have been done in part")
          : new ApiException(ErrorCode.INTERNAL_ERROR, "Internal error");
    }
    if (unreplicated && wrote) {
      return new ApiException(ErrorCode.OUTCOME_UNKNOWN, "Stored on the Redis primary, but fewer replicas than"
          + " redis.waitReplicas took it in time: a failover may lose it; retry (a publish with its idempotencyKey)");
    }
    return sent && wrote
        ? new ApiException(ErrorCode.OUTCOME_UNKNOWN,
            "Redis stopped answering after the request was sent: it may or may not have been done")
        : new ApiException(ErrorCode.STORE_UNAVAILABLE, "The event store (Redis) is unavailable; nothing was done");
  }
}
