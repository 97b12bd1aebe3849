package io.herald.auth;

import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;

/**
 * The first route handler: finds the request's credentials ({@code Authorization: Bearer <token>},
 * or {@code ?access_token=} on a WebSocket upgrade, which browsers cannot give headers), lets the
 * {@link Authenticator} judge them, and answers {@code 401 UNAUTHENTICATED} or goes on with the
 * {@link Caller} in the context. Upgrades are refused this way in the handshake, with HTTP.
 */
public final class Authentication implements Handler<RoutingContext> {
  /** Context key of the {@link Caller}. */
  public static final String CALLER = "herald.caller";
  private static final String BEARER = "Bearer ";

  private final Authenticator authenticator;

  public Authentication(Authenticator authenticator) {
    this.authenticator = authenticator;
  }

  /** The request's caller (set by this handler, which runs before every guarded route). */
  public static Caller caller(RoutingContext ctx) {
    Caller caller = ctx.get(CALLER);
    return caller == null ? Caller.ANYONE : caller;
  }

  /** Route handler: the caller must be an administrator. */
  public static void requireAdmin(RoutingContext ctx) {
    guard(ctx, () -> caller(ctx).checkAdmin());
  }

  /** Route handler: the caller must be granted the consumer named in the path. */
  public static void requireConsume(RoutingContext ctx) {
    guard(ctx, () -> caller(ctx).checkConsume(ctx.pathParam("consumer")));
  }

  private static void guard(RoutingContext ctx, Runnable check) {
    try {
      check.run();
    } catch (ApiException denied) {
      Responses.error(ctx, denied);
      return;
    }
    ctx.next();
  }

  @Override
  public void handle(RoutingContext ctx) {
    String token;
    try {
      token = token(ctx);
    } catch (ApiException refused) {
      Responses.error(ctx, refused);
      return;
    }
    authenticator.authenticate(token).onComplete(done -> {
      if (done.succeeded()) {
        ctx.put(CALLER, done.result());
        ctx.next();
      } else {
        Responses.error(ctx, ApiException.from(done.cause(), false));
      }
    });
  }

  private static String token(RoutingContext ctx) {
    String header = ctx.request().getHeader(HttpHeaders.AUTHORIZATION);
    if (header != null) {
      if (!header.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
        throw new ApiException(ErrorCode.UNAUTHENTICATED, "The Authorization header must be 'Bearer <token>'");
      }
      return header.substring(BEARER.length()).trim();
    }
    return ctx.request().canUpgradeToWebSocket() ? ctx.request().getParam("access_token") : null;
  }
}
