package io.herald.auth;

import io.vertx.core.Future;

/**
 * Tells who presents a bearer token. The gateway asks it for every request but the health checks,
 * and for every WebSocket upgrade before the handshake completes.
 */
@FunctionalInterface
public interface Authenticator {
  /** No credentials configured: everyone is let in (the node then listens on 127.0.0.1 only). */
  Authenticator OPEN = token -> Future.succeededFuture(Caller.ANYONE);

  /**
   * @param token the bearer token presented, or null when there is none
   * @return the caller, or a failure (an {@code UNAUTHENTICATED} ApiException) to refuse the request
   */
  Future<Caller> authenticate(String token);
}
