package io.herald.ws;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;

/**
 * Pings a socket that has been quiet for {@code intervalMs} and closes it when nothing, not even a
 * pong, came back within {@code timeoutMs} more: a peer behind a dead network path would otherwise
 * hold its deliveries and parked polls until TCP gives up, many minutes later.
 */
final class Heartbeat {
  /** Close code for a peer that stopped answering (the connection is gone as far as we can tell). */
  static final short NO_ANSWER = 1011;

  private final Vertx vertx;
  private final ServerWebSocket socket;
  private final long intervalMs;
  private final long timeoutMs;
  private long lastHeard = System.nanoTime();
  private long timer;

  Heartbeat(Vertx vertx, ServerWebSocket socket, long intervalMs, long timeoutMs) {
    this.vertx = vertx;
    this.socket = socket;
    this.intervalMs = intervalMs;
    this.timeoutMs = timeoutMs;
  }

  void start() {
    socket.pongHandler(pong -> heard());
    timer = vertx.setPeriodic(Math.max(1, Math.min(intervalMs, timeoutMs) / 2), t -> check());
  }

  /** Call for every frame received from the peer. */
  void heard() {
    lastHeard = System.nanoTime();
  }

  void stop() {
    vertx.cancelTimer(timer);
  }

  private void check() {
    long quietMs = (System.nanoTime() - lastHeard) / 1_000_000;
    if (quietMs >= intervalMs + timeoutMs) {
      stop();
      socket.close(NO_ANSWER, "No answer to ping");
    } else if (quietMs >= intervalMs) {
      socket.writePing(Buffer.buffer("herald"));
    }
  }
}
