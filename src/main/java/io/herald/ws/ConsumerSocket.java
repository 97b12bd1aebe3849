package io.herald.ws;

import io.herald.ack.Acks;
import io.herald.ack.Settlements;
import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.PollService;
import io.herald.lifecycle.Drain;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.protocol.JsonLimits;
import io.herald.protocol.Requests;
import io.herald.throttle.RateLimiter;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One consumer's WebSocket: text frames of one JSON object each, answered by type. A bad frame gets
 * an error frame in the protocol's envelope and the socket stays usable.
 *
 * <p>When the consumer goes over its rate limit (told by any node, or found by a refused poll),
 * the socket is told with a 429 error frame at once and every {@code noticeIntervalMs}; polls are
 * refused (by Redis, which holds the block) while acks go on; after {@code graceMs} the socket is
 * dropped without a close frame, or closed with 1008 under {@code closeMode: "policy"}.
 */
final class ConsumerSocket {
  private static final short POLICY_VIOLATION = 1008;
  /** Operations read but not answered yet beyond which the socket stops reading. */
  static final int MAX_IN_FLIGHT = 256;
  /** The operations that settle deliveries. */
  private static final Set<String> SETTLEMENTS = Set.of("ack", "nack", "extend");

  private final Vertx vertx;
  private final ServerWebSocket socket;
  private final Frames frames;
  /** Ends the connection without a close frame. */
  private final Runnable drop;
  private final ConsumerSettings consumer;
  private final PollService poller;
  private final RateLimiter rateLimiter;
  private final Acks acks;
  private final Settlements settlements;
  private final Drain drain;
  private final PushStream push;
  private final ReadGate gate;
  private long noticeTimer = -1;
  /** The settlements read from the socket and not answered yet (a release on close waits for them). */
  private final Set<Future<Buffer>> settling = new HashSet<>();

  ConsumerSocket(Vertx vertx, ServerWebSocket socket, Frames frames, Runnable drop, ConsumerSettings consumer,
      PollService poller, RateLimiter rateLimiter, Acks acks, Settlements settlements, Drain drain) {
    this.vertx = vertx;
    this.drain = drain;
    this.socket = socket;
    this.frames = frames;
    this.drop = drop;
    this.consumer = consumer;
    this.poller = poller;
    this.rateLimiter = rateLimiter;
    this.acks = acks;
    this.settlements = settlements;
    this.push = new PushStream(vertx, consumer, poller, batch -> send(Frames.frame("batch", null, batch)),
        () -> !socket.writeQueueFull(), this::blocked);
    // a reader that stops reading: push pauses while the write queue is full, and so does reading
    this.gate = new ReadGate(socket, MAX_IN_FLIGHT, push::drained);
  }

  private void send(Buffer frame) {
    frames.send(socket, frame);
    gate.check();
  }

  private void sendError(Object requestId, ApiException error) {
    frames.sendError(socket, requestId, error);
    gate.check();
  }

  /** The consumer is blocked by its rate limit for {@code blockMs} more: notices, then the socket goes. */
  void blocked(long blockMs) {
    if (noticeTimer >= 0 || socket.isClosed()) {
      return; // already on its way out
    }
    ConsumerSettings.RateLimit limit = consumer.rateLimit();
    push.stop();
    sendError(null, ApiException.tooManyRequests(blockMs));
    noticeTimer = vertx.setPeriodic(limit.noticeIntervalMs(), t -> sendError(null, ApiException.tooManyRequests(blockMs)));
    vertx.setTimer(Math.max(1, Math.min(limit.graceMs(), blockMs)), t -> {
      if (limit.closeMode() == ConsumerSettings.CloseMode.POLICY) {
        socket.close(POLICY_VIOLATION, "Too Many Requests");
      } else {
        drop.run();
      }
    });
  }

  void start() {
    socket.closeHandler(v -> {
      vertx.cancelTimer(noticeTimer);
      push.close();
      if (consumer.redeliverOnDisconnect()) {
        // after the acks, nacks and extends read from the socket before it closed: released
        // first, a delivery could go out again before its ack landed, and come twice
        // (if the release fails the deliveries still come back at their deadlines)
        Future.join(List.copyOf(settling)).onComplete(settled -> poller.release(consumer, push.unacked()));
      }
    });
    socket.textMessageHandler(this::onText);
  }

  private void onText(String text) {
    JsonObject message;
    try {
      message = JsonLimits.object(Buffer.buffer(text), "frame");
    } catch (ApiException e) {
      sendError(null, e);
      return;
    }
    Object requestId = message.getValue("requestId");
    // a stopping node answers it before it closes the socket (a poll is refused: see PollService)
    drain.count();
    Future<Buffer> answer;
    try {
      answer = answer(message, requestId);
    } catch (RuntimeException e) {
      answer = Future.failedFuture(e);
    }
    gate.started();
    if (message.getValue("op") instanceof String op && SETTLEMENTS.contains(op)) {
      Future<Buffer> settlement = answer;
      settling.add(settlement);
      settlement.onComplete(done -> settling.remove(settlement));
    }
    answer.onComplete(done -> {
      drain.leave();
      if (done.succeeded()) {
        send(done.result());
      } else {
        ApiException error = ApiException.from(done.cause(), true);
        sendError(requestId, error);
        if (error.code() == ErrorCode.TOO_MANY_REQUESTS) {
          blocked(error.retryAfterMs());
        }
      }
      gate.answered();
    });
  }

  private Future<Buffer> answer(JsonObject message, Object requestId) {
    Object op = message.getValue("op");
    if (!(op instanceof String name)) {
      throw ApiException.invalid("op", "must name an operation");
    }
    switch (name) {
      case "ping" -> {
        return Future.succeededFuture(Frames.frame("pong", requestId, null));
      }
      case "poll" -> {
        only(message, "maxEvents");
        Long maxEvents = Requests.integer(message, "maxEvents", 1, 1000);
        // answered at once (no wait): nothing to stop when the socket closes meanwhile
        return poller.poll(consumer, maxEvents == null ? consumer.maxPollRecords() : maxEvents.intValue(), 0, true, "ws")
            .answer()
            .map(batch -> {
              if (socket.isClosed()) {
                // closed on the way: released as the socket's other deliveries were
                if (consumer.redeliverOnDisconnect()) {
                  poller.release(consumer, batch.ackIds());
                }
              } else {
                push.track(batch);
              }
              return Frames.frame("batch", requestId, batch.json());
            });
      }
      case "subscribe" -> {
        only(message, "window");
        Long window = Requests.integer(message, "window", 1, consumer.maxUnacked());
        if (window == null) {
          throw ApiException.invalid("window", "is required: 1.." + consumer.maxUnacked());
        }
        return rateLimiter.admit(consumer).map(admitted -> {
          push.start(window.intValue());
          return Frames.frame("subscribed", requestId, new JsonObject().put("window", window).toBuffer());
        });
      }
      case "unsubscribe" -> {
        only(message);
        push.stop();
        return Future.succeededFuture(Frames.frame("unsubscribed", requestId, null));
      }
      case "ack" -> {
        only(message, "ackIds", "batchAckId", "batchAckIds");
        JsonArray batchAckIds = Requests.strings(message, "batchAckIds", Acks.MAX_BATCH_ACK_IDS).copy();
        Object single = message.getValue("batchAckId");
        if (single != null) {
          if (!(single instanceof String id)) {
            throw ApiException.invalid("batchAckId", "must be a string");
          }
          batchAckIds.add(id);
        }
        return acks.ack(consumer, Requests.strings(message, "ackIds", Acks.MAX_ACK_IDS), batchAckIds, true)
            .map(results -> {
              push.settled(results.getJsonArray("results"));
              return Frames.frame("ackResult", requestId, results.toBuffer());
            });
      }
      case "nack" -> {
        only(message, Settlements.NACK_FIELDS);
        return settlements.nack(consumer.name(), message, true).map(results -> {
          // a nacked delivery leaves the window as an acked one does
          push.settled(results.getJsonArray("results"));
          return Frames.frame("nackResult", requestId, results.toBuffer());
        });
      }
      case "extend" -> {
        only(message, Settlements.EXTEND_FIELDS);
        return settlements.extend(consumer.name(), message).map(results -> {
          push.extended(results.getJsonArray("results"), message.getLong("extendMs"));
          return Frames.frame("extendResult", requestId, results.toBuffer());
        });
      }
      default -> throw ApiException.invalid("op", "unknown operation '" + name + "'");
    }
  }

  /** Refuses fields other than {@code fields}, {@code op} and {@code requestId}. */
  private static void only(JsonObject message, String... fields) {
    String[] allowed = java.util.Arrays.copyOf(fields, fields.length + 2);
    allowed[fields.length] = "op";
    allowed[fields.length + 1] = "requestId";
    Requests.onlyFields(message, allowed);
  }
}
