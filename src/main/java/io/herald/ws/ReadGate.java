package io.herald.ws;

import io.vertx.core.http.ServerWebSocket;

/**
 * Stops reading a socket while its write queue is full or too many of its requests are unanswered,
 * and reads again once both have cleared: a client that sends without reading what it is sent
 * cannot make the node buffer without bound, and TCP holds it back instead. Event-loop confined.
 */
final class ReadGate {
  private final ServerWebSocket socket;
  private final int maxInFlight;
  private int inFlight;
  private boolean paused;

  /** @param drained also told when the write queue drained (the gate's own check runs first) */
  ReadGate(ServerWebSocket socket, int maxInFlight, Runnable drained) {
    this.socket = socket;
    this.maxInFlight = maxInFlight;
    socket.drainHandler(v -> {
      check();
      drained.run();
    });
  }

  /** A request was read: it is in flight until {@link #answered()}. */
  void started() {
    inFlight++;
    check();
  }

  /** A request's answer was written (or dropped, the socket being closed). */
  void answered() {
    inFlight--;
    check();
  }

  /** Call after writing to the socket. */
  void check() {
    boolean hold = inFlight >= maxInFlight || socket.writeQueueFull();
    if (hold != paused && !socket.isClosed()) {
      paused = hold;
      if (hold) {
        socket.pause();
      } else {
        socket.resume();
      }
    }
  }
}
