package io.herald.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;

/**
 * A refusal by the gateway (its error envelope: status, stable code, message, details), or a failure to
 * reach it ({@link #UNREACHABLE}, status 0).
 */
public class HeraldException extends RuntimeException {
  /** The code of a failure to reach the gateway: a lost connection, a timeout. */
  public static final String UNREACHABLE = "UNREACHABLE";
  private static final Set<String> TRANSIENT = Set.of(UNREACHABLE, "STORE_UNAVAILABLE", "OUTCOME_UNKNOWN",
      "NODE_SHUTTING_DOWN");

  private final int status;
  private final String code;
  private final transient JsonNode details;

  public HeraldException(int status, String code, String message, JsonNode details) {
    super(code + ": " + message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  HeraldException(String message, Throwable cause) {
    super(UNREACHABLE + ": " + message, cause);
    this.status = 0;
    this.code = UNREACHABLE;
    this.details = null;
  }

  /** The failure as a HeraldException: itself, the one it wraps (a CompletionException's), or an UNREACHABLE one. */
  static HeraldException of(Throwable failure) {
    if (failure instanceof HeraldException herald) {
      return herald;
    }
    if (failure.getCause() instanceof HeraldException herald) {
      return herald;
    }
    return new HeraldException(String.valueOf(failure.getCause() == null ? failure : failure.getCause()), failure);
  }

  /** The HTTP status (0 when the gateway was not reached). */
  public int status() {
    return status;
  }

  /** The protocol's stable code, e.g. {@code QUOTA_EXCEEDED}, or {@link #UNREACHABLE}. */
  public String code() {
    return code;
  }

  /** The envelope's details (e.g. {@code {"scope":"consumer"}}), or null. */
  public JsonNode details() {
    return details;
  }

  /**
   * Whether the same request may succeed later: the gateway or its Redis was away or the answer was
   * lost. The library retries these itself (publishes with the same idempotencyKey).
   */
  public boolean isTransient() {
    return TRANSIENT.contains(code);
  }
}
