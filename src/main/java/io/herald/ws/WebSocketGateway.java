package io.herald.ws;

import io.herald.ack.Acks;
import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.PollService;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.http.Responses;
import io.herald.publish.PublishService;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The WebSocket gateway: consumer sockets ({@code GET /v1/consumers/{consumer}/ws}) and publishing
 * sockets ({@code GET /v1/ws/publish}). It lives in the HTTP verticle's server because Vert.x
 * spreads the connections of one port over every server listening on it, whatever their paths; the
 * sockets use the same publish, poll and ack paths as HTTP.
 */
public final class WebSocketGateway {
  private static final short GOING_AWAY = 1001;
  private static final short MESSAGE_TOO_BIG = 1009;
  private final Vertx vertx;
  private final PollService poller;
  private final Acks acks;
  private final PublishService publisher;
  private final long pingIntervalMs;
  private final long pongTimeoutMs;
  private final Set<ServerWebSocket> open = new HashSet<>();

  public WebSocketGateway(Vertx vertx, PollService poller, Acks acks, PublishService publisher,
      long pingIntervalMs, long pongTimeoutMs) {
    this.vertx = vertx;
    this.poller = poller;
    this.acks = acks;
    this.publisher = publisher;
    this.pingIntervalMs = pingIntervalMs;
    this.pongTimeoutMs = pongTimeoutMs;
  }

  /** Upgrades the request to a socket of {@code consumer}, checked before the handshake completes. */
  public void acceptConsumer(RoutingContext ctx, ConsumerSettings consumer) {
    upgrade(ctx).onSuccess(socket -> new ConsumerSocket(vertx, socket, consumer, poller, acks).start());
  }

  /** Upgrades the request to a publishing socket. */
  public void acceptPublisher(RoutingContext ctx) {
    upgrade(ctx).onSuccess(socket -> new PublishSocket(socket, publisher).start());
  }

  /** Closes every socket with 1001 Going Away, for a node that shuts down. */
  public Future<Void> closeAll() {
    List<Future<Void>> closing = new ArrayList<>();
    for (ServerWebSocket socket : List.copyOf(open)) {
      closing.add(socket.close(GOING_AWAY, "Going Away"));
    }
    return Future.join(closing).mapEmpty();
  }

  private Future<ServerWebSocket> upgrade(RoutingContext ctx) {
    if (!ctx.request().canUpgradeToWebSocket()) {
      ApiException notUpgrade = new ApiException(ErrorCode.INVALID_REQUEST, "This route only upgrades to a WebSocket");
      Responses.error(ctx, notUpgrade);
      return Future.failedFuture(notUpgrade);
    }
    return ctx.request().toWebSocket()
        .onSuccess(socket -> {
          open.add(socket);
          Heartbeat heartbeat = new Heartbeat(vertx, socket, pingIntervalMs, pongTimeoutMs);
          heartbeat.start();
          // every frame counts as a sign of life; the sockets' own handlers see the messages
          socket.frameHandler(frame -> heartbeat.heard());
          socket.endHandler(v -> {
            open.remove(socket);
            heartbeat.stop();
          });
          // Vert.x drops a message over maxWebSocketMessageSize and reports it here, leaving the
          // socket open; the protocol closes it with 1009 (Netty closes for one oversized frame)
          socket.exceptionHandler(failure -> {
            if (failure instanceof IllegalStateException) {
              socket.close(MESSAGE_TOO_BIG, "Message Too Big");
            }
          });
          socket.binaryMessageHandler(binary ->
              Frames.sendError(socket, null, ApiException.invalid("frame", "frames are JSON text")));
        })
        .onFailure(failure -> Responses.error(ctx, ApiException.invalid("upgrade", String.valueOf(failure.getMessage()))));
  }
}
