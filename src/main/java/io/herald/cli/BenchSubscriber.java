package io.herald.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.http.WebSocket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The consuming side of {@code bench}: one WebSocket subscribed in push mode, acking each batch by its
 * batchAckId as it arrives, and timing each event's first delivery from the moment its publish was
 * sent (the payload's {@code t}, on this process' clock).
 */
final class BenchSubscriber implements WebSocket.Listener {
  final AtomicLong delivered = new AtomicLong();
  final AtomicLong redelivered = new AtomicLong();
  final AtomicLong acked = new AtomicLong();
  final Latencies latencies = new Latencies();
  /** Why the socket closed or failed, once it has. */
  final AtomicReference<String> ended = new AtomicReference<>();

  private final long origin;
  private final StringBuilder frame = new StringBuilder();
  // the JDK's WebSocket refuses a send before the one before it completed: sends are chained
  private CompletableFuture<?> sending = CompletableFuture.completedFuture(null);

  BenchSubscriber(long origin) {
    this.origin = origin;
  }

  /** Subscribes with a window of {@code window} unacked events. */
  void subscribe(WebSocket socket, int window) {
    send(socket, new JsonObject().put("op", "subscribe").put("window", window));
  }

  @Override
  public CompletionStage<?> onText(WebSocket socket, CharSequence part, boolean last) {
    frame.append(part);
    if (last) {
      JsonObject message = new JsonObject(frame.toString());
      frame.setLength(0);
      receive(socket, message);
    }
    socket.request(1);
    return null;
  }

  private void receive(WebSocket socket, JsonObject message) {
    switch (message.getString("type", "")) {
      case "batch" -> {
        long now = System.nanoTime();
        JsonArray events = message.getJsonArray("events");
        for (Object e : events) {
          JsonObject event = (JsonObject) e;
          if (event.getInteger("deliveryCount", 1) == 1) {
            latencies.add(now - origin - ((JsonObject) event.getValue("payload")).getLong("t"));
          } else {
            redelivered.incrementAndGet();
          }
        }
        delivered.addAndGet(events.size());
        send(socket, new JsonObject().put("op", "ack").put("batchAckId", message.getString("batchAckId")));
      }
      case "ackResult" -> acked.addAndGet(message.getJsonArray("results").stream()
          .filter(r -> "ACKED".equals(((JsonObject) r).getString("status"))).count());
      case "error" -> ended.compareAndSet(null, message.getString("code") + ": " + message.getString("message"));
      default -> { }
    }
  }

  private void send(WebSocket socket, JsonObject message) {
    sending = sending.thenCompose(sent -> socket.sendText(message.encode(), true));
  }

  @Override
  public CompletionStage<?> onClose(WebSocket socket, int status, String reason) {
    ended.compareAndSet(null, "closed " + status + " " + reason);
    return null;
  }

  @Override
  public void onError(WebSocket socket, Throwable error) {
    ended.compareAndSet(null, String.valueOf(error));
  }
}
