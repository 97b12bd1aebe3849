package io.herald.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.URI;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A subscriber over a WebSocket in push mode: it subscribes with its window and the gateway sends
 * batches while fewer than that many of this connection's deliveries are unsettled. Settlements go
 * over the same socket. A closed or failed socket, or one told the consumer is blocked (429), is
 * opened again on the next node, after a jittered backoff (or the {@code Retry-After} of a blocked
 * consumer's refused upgrade), and subscribed again;
 * settlements made while no socket is open, or whose socket went before they were answered, go
 * over HTTP (an ackId is valid on any connection of the consumer).
 */
final class PushSubscriber extends AbstractSubscriber implements WebSocket.Listener {
  private final StringBuilder frame = new StringBuilder();
  private volatile WebSocket socket;
  /** The node of the socket being opened, then of the open one. */
  private volatile URI node;
  // the JDK's WebSocket refuses a send before the one before it completed: sends are chained
  private CompletableFuture<?> sending = CompletableFuture.completedFuture(null);
  private final AtomicLong lastRequestId = new AtomicLong();
  /** Settlements sent and not answered, by requestId. */
  private final Map<Long, Unanswered> unanswered = new ConcurrentHashMap<>();

  private record Unanswered(WebSocket socket, CompletableFuture<JsonNode> answer) {}

  PushSubscriber(Gateway gateway, String consumer, EventHandler handler, SubscriberSettings settings,
      ScheduledExecutorService timers) {
    super(gateway, consumer, handler, settings, timers);
  }

  @Override
  protected void begin() {
    connect();
  }

  private void connect() {
    if (closing) {
      return;
    }
    node = gateway.endpoint();
    gateway.webSocket(path("/ws"), this).whenComplete((opened, failure) -> {
      if (failure == null) {
        return;
      }
      HttpResponse<?> refused = Gateway.refusedUpgrade(failure);
      if (refused == null || refused.statusCode() >= 500) {
        reconnectIn(backoff.nextMs());
      } else if (refused.statusCode() == 429) {
        // the consumer is blocked: every upgrade is refused until the block ends
        throttled.incrementAndGet();
        long retryAfterMs = Gateway.retryAfterMs(refused.headers().firstValue("Retry-After").orElse(null));
        reconnectIn(Math.max(retryAfterMs, backoff.nextMs()));
      } else {
        stop(new HeraldException(refused.statusCode(), "UPGRADE_REFUSED",
            "the gateway refused the WebSocket of consumer " + consumer + " (HTTP " + refused.statusCode() + ")", null));
      }
    });
  }

  private void reconnectIn(long delayMs) {
    if (!closing) {
      timers.schedule(this::connect, delayMs, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public void onOpen(WebSocket opened) {
    synchronized (this) {
      if (closing) {
        // opened after close() or a stop: nothing may come to a subscriber that no longer takes events
        opened.abort();
        return;
      }
      socket = opened;
      sending = CompletableFuture.completedFuture(null);
      // a frame the last socket left half-read is not this one's (callbacks run on one thread per socket)
      frame.setLength(0);
    }
    // acks first: pushed before them, their events would be handed out again (their deadlines passed)
    flushAcks();
    send(Json.object().put("op", "subscribe").put("window", window())).whenComplete((sent, failure) -> {
      if (failure != null) {
        restart(opened);
      }
    });
    opened.request(1);
  }

  @Override
  public CompletionStage<?> onText(WebSocket from, CharSequence part, boolean last) {
    frame.append(part);
    if (last) {
      JsonNode message = Json.decode(frame.toString());
      frame.setLength(0);
      receive(message);
    }
    from.request(1);
    return null;
  }

  private void receive(JsonNode message) {
    JsonNode requestId = message.get("requestId");
    Unanswered settlement = requestId != null && requestId.canConvertToLong() ? unanswered.remove(requestId.asLong()) : null;
    if (settlement != null) {
      if (message.path("status").asInt() >= 500) {
        settlement.answer().completeExceptionally(new HeraldException(message.path("status").asInt(),
            message.path("code").asText(), message.path("message").asText(), message.get("details")));
      } else {
        settlement.answer().complete(message);
      }
    }
    switch (message.path("type").asText()) {
      case "batch" -> message.path("events").forEach(this::dispatch);
      case "subscribed" -> {
        connections.incrementAndGet();
        backoff.reset();
      }
      case "error" -> {
        int status = message.path("status").asInt();
        if (status == 429) {
          throttled.incrementAndGet();
          // the gateway drops a blocked consumer's sockets after their grace, and its upgrades wait for
          // the block's end: leave now (a drop that comes with the notice can go unseen by the JDK's client)
          restart(socket);
        } else if (status == 503) {
          // the subscribe (or a settlement) met Redis away: start again on a new connection
          restart(socket);
        } else if (settlement == null) {
          // a refused settlement leaves its events to their deadlines; anything else is for good
          stop(new HeraldException(status, message.path("code").asText(), message.path("message").asText(),
              message.get("details")));
        }
      }
      default -> {
        // ackResult, nackResult, extendResult: answered above; pong, unsubscribed: nothing to do
      }
    }
  }

  @Override
  public CompletionStage<?> onClose(WebSocket closed, int status, String reason) {
    lost(closed);
    return null;
  }

  @Override
  public void onError(WebSocket failed, Throwable error) {
    lost(failed);
  }

  /** Gives up a socket and connects again after a backoff (an aborted socket may tell its listener nothing). */
  private void restart(WebSocket stale) {
    if (stale != null) {
      stale.abort();
      lost(stale);
    }
  }

  private synchronized void lost(WebSocket lost) {
    if (socket == lost) {
      socket = null;
      // dropped, or left after a 429 or 503: what its settlements retry over HTTP goes to the next node
      gateway.failed(node);
      reconnectIn(backoff.nextMs());
    }
    unanswered.values().removeIf(sent -> {
      boolean gone = sent.socket() == lost;
      if (gone) {
        sent.answer().completeExceptionally(new HeraldException("the connection closed before the answer", null));
      }
      return gone;
    });
  }

  private synchronized CompletableFuture<?> send(ObjectNode message) {
    WebSocket open = socket;
    if (open == null) {
      return CompletableFuture.failedFuture(new HeraldException("not connected", null));
    }
    String text = Json.encode(message);
    sending = sending.exceptionally(failed -> null).thenCompose(sent -> open.sendText(text, true));
    return sending;
  }

  /**
   * Sends a settlement with a requestId; its answer completes it, and it fails when it could not be
   * sent, its socket went first, or it met Redis away (5xx).
   */
  @Override
  protected synchronized CompletableFuture<Boolean> settleOverConnection(String op, ObjectNode body) {
    WebSocket open = socket;
    if (open == null) {
      return null;
    }
    long requestId = lastRequestId.incrementAndGet();
    CompletableFuture<JsonNode> answer = new CompletableFuture<>();
    unanswered.put(requestId, new Unanswered(open, answer));
    ObjectNode frame = body.deepCopy().put("op", op).put("requestId", requestId);
    send(frame).whenComplete((sent, failure) -> {
      if (failure != null && unanswered.remove(requestId) != null) {
        answer.completeExceptionally(failure);
      }
    });
    return answer.handle((answered, failure) -> failure == null);
  }

  @Override
  protected void end() {
    send(Json.object().put("op", "unsubscribe"));
  }

  @Override
  protected void disconnect() {
    WebSocket open = socket;
    socket = null;
    if (open != null) {
      sending.handle((sent, failed) -> open.sendClose(WebSocket.NORMAL_CLOSURE, "subscriber closed"));
    }
  }
}
