package io.herald.http;

import io.herald.ws.OriginCheck;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.ext.web.RoutingContext;

/**
 * Lets pages of the origins in {@code http.allowedOrigins} call the HTTP API from a browser (CORS),
 * as they may already open its WebSockets: their requests are answered with
 * {@code Access-Control-Allow-Origin} and may read {@code Retry-After}; their preflights are answered
 * here, before credentials (a preflight carries none). Other origins get no CORS headers, so their
 * pages cannot read an answer; same-origin pages (the console) need none. Vert.x's CorsHandler is not
 * used: it refuses every origin not listed, the gateway's own included.
 */
final class CrossOriginRequests implements Handler<RoutingContext> {
  private static final String METHODS = "GET, POST, PUT, DELETE";
  private static final String HEADERS = "Authorization, Content-Type";
  private static final String PREFLIGHT_CACHE_SECONDS = "600";

  private final OriginCheck origins;

  CrossOriginRequests(OriginCheck origins) {
    this.origins = origins;
  }

  @Override
  public void handle(RoutingContext ctx) {
    String origin = ctx.request().getHeader("Origin");
    // an upgrade's origin is checked by OriginCheck, and its answer is the socket's handshake
    if (origin == null || !origins.listed(origin) || ctx.request().getHeader("Upgrade") != null) {
      ctx.next();
      return;
    }
    HttpServerResponse response = ctx.response().putHeader("Access-Control-Allow-Origin", origin).putHeader("Vary", "Origin");
    if (ctx.request().method() == HttpMethod.OPTIONS && ctx.request().getHeader("Access-Control-Request-Method") != null) {
      response.putHeader("Access-Control-Allow-Methods", METHODS).putHeader("Access-Control-Allow-Headers", HEADERS)
          .putHeader("Access-Control-Max-Age", PREFLIGHT_CACHE_SECONDS).setStatusCode(204).end();
      return;
    }
    response.putHeader("Access-Control-Expose-Headers", "Retry-After");
    ctx.next();
  }
}
