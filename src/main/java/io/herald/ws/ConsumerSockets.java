package io.herald.ws;

import io.herald.ack.Acks;
import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.PollService;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.http.Responses;
import io.vertx.core.Vertx;
import io.vertx.ext.web.RoutingContext;

/**
 * The consumer side of the WebSocket gateway ({@code GET /v1/consumers/{consumer}/ws}). It lives in
 * the HTTP verticle's server because Vert.x spreads the connections of one port over every server
 * listening on it, whatever their paths; the sockets use the same poll and ack paths as HTTP.
 */
public final class ConsumerSockets {
  private final Vertx vertx;
  private final PollService poller;
  private final Acks acks;

  public ConsumerSockets(Vertx vertx, PollService poller, Acks acks) {
    this.vertx = vertx;
    this.poller = poller;
    this.acks = acks;
  }

  /** Upgrades the request to a socket of {@code consumer}, checked before the handshake completes. */
  public void accept(RoutingContext ctx, ConsumerSettings consumer) {
    if (!ctx.request().canUpgradeToWebSocket()) {
      Responses.error(ctx, new ApiException(ErrorCode.INVALID_REQUEST, "This route only upgrades to a WebSocket"));
      return;
    }
    ctx.request().toWebSocket()
        .onSuccess(socket -> new ConsumerSocket(vertx, socket, consumer, poller, acks).start())
        .onFailure(failure -> Responses.error(ctx, ApiException.invalid("upgrade", String.valueOf(failure.getMessage()))));
  }
}
