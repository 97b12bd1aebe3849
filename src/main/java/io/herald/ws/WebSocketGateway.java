package io.herald.ws;

import io.herald.ack.Acks;
import io.herald.ack.Settlements;
import io.herald.auth.Authentication;
import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.PollService;
import io.herald.http.Responses;
import io.herald.lifecycle.Drain;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.publish.PublishService;
import io.herald.throttle.RateLimiter;
import io.herald.vertx.VertxInternals;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.ext.web.RoutingContext;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The WebSocket gateway: consumer sockets ({@code GET /v1/consumers/{consumer}/ws}) and publishing
 * sockets ({@code GET /v1/ws/publish}). It lives in the HTTP verticle's server because Vert.x
 * spreads the connections of one port over every server listening on it, whatever their paths; the
 * sockets use the same publish, poll and ack paths as HTTP.
 */
public final class WebSocketGateway {
  private static final short GOING_AWAY = 1001;
  private static final short MESSAGE_TOO_BIG = 1009;
  private static final short POLICY_VIOLATION = 1008;
  private final Vertx vertx;
  private final PollService poller;
  private final Acks acks;
  private final PublishService publisher;
  private final long pingIntervalMs;
  private final long pongTimeoutMs;
  private final RateLimiter rateLimiter;
  private final Settlements settlements;
  /** A stopping node waits for what its consumer sockets asked (acks, nacks, extends) before closing them. */
  private final Drain drain;
  private final Frames frames;
  private final Set<ServerWebSocket> sockets = new HashSet<>();
  /** The consumer sockets of this instance, by consumer: a block reaches all of them. */
  private final Map<String, Set<ConsumerSocket>> byConsumer = new HashMap<>();

  /** @param maxFrameBytes the largest WebSocket frame (the server's): longer messages go in several */
  public WebSocketGateway(Vertx vertx, PollService poller, RateLimiter rateLimiter, Acks acks,
      Settlements settlements, PublishService publisher, long pingIntervalMs, long pongTimeoutMs, int maxFrameBytes,
      Drain drain) {
    this.vertx = vertx;
    this.drain = drain;
    this.frames = new Frames(maxFrameBytes);
    this.poller = poller;
    this.rateLimiter = rateLimiter;
    this.settlements = settlements;
    this.acks = acks;
    this.publisher = publisher;
    this.pingIntervalMs = pingIntervalMs;
    this.pongTimeoutMs = pongTimeoutMs;
  }

  /**
   * Upgrades the request to a socket of {@code consumer}; while the consumer is blocked by its rate
   * limit the handshake is refused with 429.
   */
  public void acceptConsumer(RoutingContext ctx, ConsumerSettings consumer) {
    rateLimiter.checkNotBlocked(consumer).onComplete(checked -> {
      if (checked.failed()) {
        Responses.error(ctx, ApiException.from(checked.cause(), false));
        return;
      }
      HttpConnection connection = ctx.request().connection();
      upgrade(ctx, socket -> {
        ConsumerSocket opened = new ConsumerSocket(vertx, socket, frames, () -> drop(connection, socket), consumer,
            poller, rateLimiter, acks, settlements, drain);
        Set<ConsumerSocket> ofConsumer = byConsumer.computeIfAbsent(consumer.name(), name -> new HashSet<>());
        ofConsumer.add(opened);
        opened.start();
        return () -> {
          ofConsumer.remove(opened);
          if (ofConsumer.isEmpty()) {
            byConsumer.remove(consumer.name(), ofConsumer);
          }
        };
      });
    });
  }

  /** The consumer went over its rate limit (on any node): every socket of it here is told, then goes. */
  public void blocked(String consumer, long blockMs) {
    for (ConsumerSocket socket : List.copyOf(byConsumer.getOrDefault(consumer, Set.of()))) {
      socket.blocked(blockMs);
    }
  }

  /** Upgrades the request to a publishing socket. */
  public void acceptPublisher(RoutingContext ctx) {
    upgrade(ctx, socket -> {
      new PublishSocket(socket, frames, publisher, Authentication.caller(ctx)).start();
      return () -> {};
    });
  }

  /**
   * Ends a socket's connection without a close frame, so that its client sees 1006; should Vert.x
   * ever not allow that, closes the socket cleanly instead.
   */
  private static void drop(HttpConnection connection, ServerWebSocket socket) {
    if (!VertxInternals.dropWithoutCloseFrame(connection)) {
      socket.close();
    }
  }

  /** Closes every socket with 1001 Going Away, for a node that shuts down. */
  public Future<Void> closeAll() {
    List<Future<Void>> closing = new ArrayList<>();
    for (ServerWebSocket socket : List.copyOf(sockets)) {
      closing.add(socket.close(GOING_AWAY, "Going Away"));
    }
    return Future.join(closing).mapEmpty();
  }

  /**
   * A socket lives no longer than its credentials: one opened with a token is closed with 1008
   * {@code Token Expired} when the token expires (its exp, plus the configured leeway), and its
   * client connects again with a new one. {@code timer} holds the timer (none for credentials that
   * do not expire); a day at most at a time, so that no far expiry overflows a timer.
   */
  private void closeOnExpiry(ServerWebSocket socket, Long expiresAtMs, long[] timer) {
    if (expiresAtMs == null) {
      return;
    }
    long leftMs = expiresAtMs - System.currentTimeMillis();
    if (leftMs <= 0) {
      socket.close(POLICY_VIOLATION, "Token Expired");
      return;
    }
    timer[0] = vertx.setTimer(Math.min(leftMs, TimeUnit.DAYS.toMillis(1)), t -> closeOnExpiry(socket, expiresAtMs, timer));
  }

  /**
   * Upgrades, with heartbeats and frame limits, then hands the socket to {@code open}, which returns
   * what to do when the socket is gone.
   */
  private void upgrade(RoutingContext ctx, Function<ServerWebSocket, Runnable> open) {
    if (!ctx.request().canUpgradeToWebSocket()) {
      Responses.error(ctx, new ApiException(ErrorCode.INVALID_REQUEST, "This route only upgrades to a WebSocket"));
      return;
    }
    ctx.request().toWebSocket()
        .onSuccess(socket -> {
          sockets.add(socket);
          Heartbeat heartbeat = new Heartbeat(vertx, socket, pingIntervalMs, pongTimeoutMs);
          heartbeat.start();
          // every frame counts as a sign of life; the sockets' own handlers see the messages
          socket.frameHandler(frame -> heartbeat.heard());
          // Vert.x drops a message over maxWebSocketMessageSize and reports it here, leaving the
          // socket open; the protocol closes it with 1009 (Netty closes for one oversized frame)
          socket.exceptionHandler(failure -> {
            if (failure instanceof IllegalStateException) {
              socket.close(MESSAGE_TOO_BIG, "Message Too Big");
            }
          });
          socket.binaryMessageHandler(binary ->
              frames.sendError(socket, null, ApiException.invalid("frame", "frames are JSON text")));
          Runnable onEnd = open.apply(socket);
          long[] expiry = {-1};
          closeOnExpiry(socket, Authentication.caller(ctx).expiresAtMs(), expiry);
          socket.endHandler(v -> {
            sockets.remove(socket);
            heartbeat.stop();
            vertx.cancelTimer(expiry[0]);
            onEnd.run();
          });
        })
        .onFailure(failure -> Responses.error(ctx, ApiException.invalid("upgrade", String.valueOf(failure.getMessage()))));
  }
}
