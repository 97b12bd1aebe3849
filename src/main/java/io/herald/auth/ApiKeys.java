package io.herald.auth;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Future;
import java.security.MessageDigest;
import java.util.List;

/**
 * Authenticates bearer tokens against the configured API keys: the token's SHA-256 is compared with
 * every key's, in constant time and without stopping at a match, so neither the secrets (never
 * stored) nor which key matched leak through timing. Refusals never repeat what was presented.
 */
public final class ApiKeys implements Authenticator {
  private final List<ApiKey> keys;

  public ApiKeys(List<ApiKey> keys) {
    this.keys = List.copyOf(keys);
  }

  @Override
  public Future<Caller> authenticate(String token) {
    if (token == null || token.isEmpty()) {
      return Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED,
          "Credentials are required: Authorization: Bearer <API key>"));
    }
    byte[] presented = ApiKey.hash(token);
    ApiKey found = null;
    for (ApiKey key : keys) {
      if (MessageDigest.isEqual(presented, key.sha256()) && found == null) {
        found = key;
      }
    }
    return found == null
        ? Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED, "Unknown API key"))
        : Future.succeededFuture(Caller.of(found.name(), found.grants()));
  }
}
