package io.herald.auth;

import io.vertx.core.Future;

/** API keys and JWTs side by side: a token shaped like a JWT goes to the JWT check, any other to the keys. */
public final class BearerTokens implements Authenticator {
  private final Authenticator apiKeys;
  private final Authenticator jwts;

  /** Either may be null (that kind of credential is not configured), not both. */
  public BearerTokens(Authenticator apiKeys, Authenticator jwts) {
    this.apiKeys = apiKeys;
    this.jwts = jwts;
  }

  @Override
  public Future<Caller> authenticate(String token) {
    if (jwts != null && (apiKeys == null || JwtTokens.looksLikeJwt(token))) {
      return jwts.authenticate(token);
    }
    return apiKeys.authenticate(token);
  }
}
