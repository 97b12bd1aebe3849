package io.herald.protocol;

import io.vertx.core.Future;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import io.vertx.core.json.JsonObject;

/** A failure the client is told about in the protocol's error envelope. */
public final class ApiException extends RuntimeException {
  private static final System.Logger LOG = System.getLogger(ApiException.class.getName());
  private final ErrorCode code;
  private final JsonObject details;
  /** For TOO_MANY_REQUESTS: ms until the block ends; else 0. */
  private final long retryAfterMs;

  public ApiException(ErrorCode code, String message) {
    this(code, message, null);
  }

  public ApiException(ErrorCode code, String message, JsonObject details) {
    this(code, message, details, 0);
  }

  private ApiException(ErrorCode code, String message, JsonObject details, long retryAfterMs) {
    super(message, null, false, false);
    this.code = code;
    this.details = details;
    this.retryAfterMs = retryAfterMs;
  }

  /** The consumer is blocked by its rate limit for {@code retryAfterMs} more; the message is the protocol's. */
  public static ApiException tooManyRequests(long retryAfterMs) {
    return new ApiException(ErrorCode.TOO_MANY_REQUESTS, "Too Many Requests", null, retryAfterMs);
  }

  public static ApiException invalid(String field, String message) {
    return new ApiException(ErrorCode.INVALID_REQUEST, field + ": " + message, new JsonObject().put("field", field));
  }

  public static ApiException unknownConsumer(String consumer) {
    return new ApiException(ErrorCode.NOT_FOUND, "No consumer named '" + consumer + "'",
        new JsonObject().put("consumer", consumer));
  }


  /** A read that failed changed nothing: its failure is STORE_UNAVAILABLE, never OUTCOME_UNKNOWN. */
  public static <T> Future<T> reading(Future<T> read) {
    return read.recover(failure -> Future.failedFuture(from(failure, false)));
  }

  /** An event that would take {@code consumer} over its own quotaBytes or quotaEvents. */
  public static ApiException overOwnQuota(String consumer) {
    return new ApiException(ErrorCode.QUOTA_EXCEEDED, "Consumer '" + consumer + "' is over its quota",
        new JsonObject().put("scope", "consumer").put("consumer", consumer));
  }

  public static ApiException consumerDisabled(String consumer) {
    return new ApiException(ErrorCode.CONSUMER_DISABLED, "Consumer '" + consumer + "' is disabled",
        new JsonObject().put("scope", "consumer").put("consumer", consumer));
  }

  /**
   * Maps any failure to what the client is told. {@code wrote}: whether the failed call may have
   * changed state, which turns a lost Redis reply into OUTCOME_UNKNOWN rather than STORE_UNAVAILABLE.
   */
  public static ApiException from(Throwable failure, boolean wrote) {
    if (failure instanceof ApiException api) {
      return api;
    }
    if (failure instanceof ClientFailure known) {
      return known.toApiException(wrote);
    }
    if (failure instanceof ReplyException reply) {
      if (reply.failureType() == ReplyFailure.RECIPIENT_FAILURE && reply.failureCode() == REPLY_FAILURE) {
        return fromEnvelope(new JsonObject(reply.getMessage()).getJsonObject("error"));
      }
      return new ApiException(wrote ? ErrorCode.OUTCOME_UNKNOWN : ErrorCode.STORE_UNAVAILABLE,
          "The gateway did not answer in time: " + reply.getMessage());
    }
    LOG.log(System.Logger.Level.ERROR, "Unexpected failure", failure);
    return new ApiException(ErrorCode.INTERNAL_ERROR, "Internal error");
  }

  /** The failure code of an event-bus reply whose message is this failure's envelope ({@link #failReply}). */
  private static final int REPLY_FAILURE = 4000;

  /** Fails an event-bus request with this failure: its code by name, message and details travel whole. */
  public void failReply(Message<?> request) {
    request.fail(REPLY_FAILURE, toJson().encode());
  }

  private static ApiException fromEnvelope(JsonObject error) {
    return new ApiException(ErrorCode.valueOf(error.getString("code")), error.getString("message"),
        error.getJsonObject("details"));
  }

  public ErrorCode code() {
    return code;
  }

  public JsonObject details() {
    return details;
  }

  public long retryAfterMs() {
    return retryAfterMs;
  }

  /** The whole seconds left until a retry may succeed (Retry-After), at least 1. */
  public long retryAfterSeconds() {
    return Math.max(1, (retryAfterMs + 999) / 1000);
  }

  /** The protocol's HTTP error body. */
  public JsonObject toJson() {
    JsonObject error = new JsonObject().put("code", code.name()).put("message", getMessage());
    if (details != null) {
      error.put("details", details);
    }
    return new JsonObject().put("error", error);
  }
}
