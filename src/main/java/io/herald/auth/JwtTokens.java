package io.herald.auth;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.settings.InvalidSettingsException;
import io.herald.settings.SettingsReader;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.auth.JWTOptions;
import io.vertx.ext.auth.PubSecKeyOptions;
import io.vertx.ext.auth.authentication.TokenCredentials;
import io.vertx.ext.auth.jwt.JWTAuth;
import io.vertx.ext.auth.jwt.JWTAuthOptions;
import java.util.List;

/**
 * Authenticates JWT bearer tokens: signature by one of the configured keys, expiry, issuer and
 * audience are checked by vertx-auth-jwt, and a token must carry an expiry; the grants come from
 * the token's grants claim and its name from {@code sub}. A refusal says what was wrong in general terms and never repeats the token.
 */
public final class JwtTokens implements Authenticator {
  private final JWTAuth verifier;
  private final String grantsClaim;
  private final int leewaySeconds;

  public JwtTokens(Vertx vertx, JwtSettings settings) {
    JWTOptions checks = new JWTOptions().setLeeway(settings.leewaySeconds());
    if (settings.issuer() != null) {
      checks.setIssuer(settings.issuer());
    }
    if (settings.audience() != null) {
      checks.setAudience(List.of(settings.audience()));
    }
    JWTAuthOptions options = new JWTAuthOptions().setJWTOptions(checks);
    settings.keys().forEach(key ->
        options.addPubSecKey(new PubSecKeyOptions().setAlgorithm(key.algorithm()).setBuffer(key.material())));
    this.verifier = JWTAuth.create(vertx, options);
    this.grantsClaim = settings.grantsClaim();
    this.leewaySeconds = settings.leewaySeconds();
  }

  /** True when {@code token} has the shape of a JWT (three base64url parts), not of an API key. */
  public static boolean looksLikeJwt(String token) {
    return token != null && token.chars().filter(c -> c == '.').count() == 2;
  }

  @Override
  public Future<Caller> authenticate(String token) {
    if (token == null || token.isEmpty()) {
      return Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED,
          "Credentials are required: Authorization: Bearer <token>"));
    }
    return verifier.authenticate(new TokenCredentials(token))
        .recover(failure -> Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED,
            "The token is not valid (signature, expiry, issuer or audience)")))
        .compose(user -> {
          JsonObject claims = user.principal();
          // vertx-auth-jwt keeps exp with the principal or, once checked, among the user's attributes
          Object exp = claims.getValue("exp") instanceof Number ? claims.getValue("exp") : user.attributes().getValue("exp");
          if (!(exp instanceof Number expSeconds)) {
            return Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED, "The token must expire (exp)"));
          }
          // accepted until then, as the verifier's leeway allows
          long expiresAtMs = expSeconds.longValue() >= Long.MAX_VALUE / 1000 - leewaySeconds
              ? Long.MAX_VALUE : (expSeconds.longValue() + leewaySeconds) * 1000;
          Object grants = claims.getValue(grantsClaim);
          String subject = claims.getString("sub", "token");
          if (!(grants instanceof JsonObject grantsObject)) {
            return Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED,
                "The token has no '" + grantsClaim + "' claim with its grants"));
          }
          SettingsReader reader = new SettingsReader(grantsObject);
          Grants read = Grants.read(reader);
          reader.finish();
          try {
            reader.failIfErrors();
          } catch (InvalidSettingsException e) {
            return Future.failedFuture(new ApiException(ErrorCode.UNAUTHENTICATED,
                "The token's '" + grantsClaim + "' claim is malformed: " + e.getMessage()));
          }
          return Future.succeededFuture(Caller.of(subject, read).expiringAt(expiresAtMs));
        });
  }
}
