package io.herald.protocol;

/** The protocol's stable error codes and their HTTP statuses. */
public enum ErrorCode {
  INVALID_REQUEST(400),
  UNAUTHENTICATED(401),
  PUBLISH_ACL_DENIED(403),
  CONSUME_ACL_DENIED(403),
  ADMIN_ACL_DENIED(403),
  /** Not in protocol.md v1: a WebSocket upgrade from a browser page of an origin not allowed. */
  ORIGIN_NOT_ALLOWED(403),
  NOT_FOUND(404),
  METHOD_NOT_ALLOWED(405),
  MESSAGE_TOO_LARGE(413),
  TOO_MANY_REQUESTS(429),
  TOPIC_DISABLED(409),
  CONSUMER_DISABLED(409),
  QUOTA_EXCEEDED(507),
  STORE_UNAVAILABLE(503),
  OUTCOME_UNKNOWN(503),
  /** Not in protocol.md v1: the node is shutting down (SIGTERM); the request goes to another node. */
  NODE_SHUTTING_DOWN(503),
  INTERNAL_ERROR(500);

  private final int status;

  ErrorCode(int status) {
    this.status = status;
  }

  public int status() {
    return status;
  }
}
