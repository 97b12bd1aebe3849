package io.herald.ws;

import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Handler;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Guards WebSocket upgrades against cross-site use from browsers: an upgrade whose {@code Origin}
 * is neither the gateway's own (same host and port as the request's {@code Host}) nor in the
 * configured allow-list ({@code http.allowedOrigins}; {@code "*"} allows any) is refused in the
 * handshake with {@code 403 ORIGIN_NOT_ALLOWED}. Clients that are not browsers send no Origin and
 * pass; they are judged by their credentials alone.
 */
public final class OriginCheck implements Handler<RoutingContext> {
  private final Set<String> allowed;
  private final boolean any;

  public OriginCheck(List<String> allowedOrigins) {
    this.any = allowedOrigins.contains("*");
    this.allowed = allowedOrigins.stream().map(OriginCheck::normalize).collect(Collectors.toUnmodifiableSet());
  }

  @Override
  public void handle(RoutingContext ctx) {
    String origin = ctx.request().getHeader("Origin");
    if (origin == null || any || allowed.contains(normalize(origin)) || sameOrigin(origin, ctx.request().getHeader("Host"))) {
      ctx.next();
      return;
    }
    Responses.error(ctx, new ApiException(ErrorCode.ORIGIN_NOT_ALLOWED,
        "WebSocket connections from this origin are not allowed", new JsonObject().put("origin", origin)));
  }

  /** Whether {@code origin} is in {@code http.allowedOrigins} (or any is allowed): its pages may call the API. */
  public boolean listed(String origin) {
    return any || allowed.contains(normalize(origin));
  }

  /** Scheme, host and port as browsers send them, in lower case, without a trailing slash. */
  private static String normalize(String origin) {
    String trimmed = origin.trim().toLowerCase(Locale.ROOT);
    return trimmed.endsWith("/") ? trimmed.substring(0, trimmed.length() - 1) : trimmed;
  }

  /**
   * True when the origin names the host (and port, when the Host header has one) the request was
   * sent to. Without a port in Host the gateway sits behind a proxy on the scheme's port: the host
   * alone is compared.
   */
  private static boolean sameOrigin(String origin, String host) {
    if (host == null) {
      return false;
    }
    URI uri;
    try {
      uri = URI.create(origin.trim());
    } catch (IllegalArgumentException e) {
      return false;
    }
    if (uri.getHost() == null || uri.getScheme() == null) {
      return false;
    }
    int colon = host.lastIndexOf(':');
    boolean hostHasPort = colon > 0 && !host.endsWith("]");
    String hostName = (hostHasPort ? host.substring(0, colon) : host).toLowerCase(Locale.ROOT);
    if (!hostName.equals(uri.getHost().toLowerCase(Locale.ROOT))) {
      return false;
    }
    if (!hostHasPort) {
      return true;
    }
    int originPort = uri.getPort() != -1 ? uri.getPort() : uri.getScheme().equalsIgnoreCase("https") ? 443 : 80;
    return host.substring(colon + 1).equals(Integer.toString(originPort));
  }
}
