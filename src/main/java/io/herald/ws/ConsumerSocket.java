package io.herald.ws;

import io.herald.ack.Acks;
import io.herald.consumer.ConsumerSettings;
import io.herald.delivery.PollService;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.http.Requests;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * One consumer's WebSocket: text frames of one JSON object each, answered by type. A bad frame gets
 * an error frame in the protocol's envelope and the socket stays usable.
 */
final class ConsumerSocket {
  private static final List<String> NOT_YET = List.of("nack", "extend");

  private final ServerWebSocket socket;
  private final ConsumerSettings consumer;
  private final PollService poller;
  private final Acks acks;
  private final Promise<Void> closed = Promise.promise();
  private final PushStream push;

  ConsumerSocket(Vertx vertx, ServerWebSocket socket, ConsumerSettings consumer, PollService poller, Acks acks) {
    this.socket = socket;
    this.consumer = consumer;
    this.poller = poller;
    this.acks = acks;
    this.push = new PushStream(vertx, consumer, poller,
        batch -> Frames.send(socket, Frames.frame("batch", null, batch)),
        () -> !socket.writeQueueFull());
  }

  void start() {
    socket.closeHandler(v -> {
      closed.tryComplete();
      push.stop();
      if (consumer.redeliverOnDisconnect()) {
        // if this fails the deliveries still come back at their deadlines
        poller.release(consumer, push.unacked());
      }
    });
    // a reader that stops reading: push pauses while the write queue is full, resumes on drain
    socket.drainHandler(v -> push.drained());
    socket.textMessageHandler(this::onText);
  }

  private void onText(String text) {
    JsonObject message;
    try {
      message = new JsonObject(text);
    } catch (DecodeException e) {
      Frames.sendError(socket, null, ApiException.invalid("frame", "must be one JSON object"));
      return;
    }
    Object requestId = message.getValue("requestId");
    Future<Buffer> answer;
    try {
      answer = answer(message, requestId);
    } catch (RuntimeException e) {
      answer = Future.failedFuture(e);
    }
    answer.onComplete(done -> {
      if (done.succeeded()) {
        Frames.send(socket, done.result());
      } else {
        Frames.sendError(socket, requestId, ApiException.from(done.cause(), true));
      }
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
        return poller.poll(consumer, maxEvents == null ? consumer.maxPollRecords() : maxEvents.intValue(), 0,
                closed.future())
            .map(batch -> {
              push.track(batch);
              return Frames.frame("batch", requestId, batch.json());
            });
      }
      case "subscribe" -> {
        only(message, "window");
        Long window = Requests.integer(message, "window", 1, consumer.maxUnacked());
        if (window == null) {
          throw ApiException.invalid("window", "is required: 1.." + consumer.maxUnacked());
        }
        push.start(window.intValue());
        return Future.succeededFuture(Frames.frame("subscribed", requestId,
            new JsonObject().put("window", window).toBuffer()));
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
        return acks.ack(consumer.name(), Requests.strings(message, "ackIds", Acks.MAX_ACK_IDS), batchAckIds)
            .map(results -> {
              push.settled(results.getJsonArray("results"));
              return Frames.frame("ackResult", requestId, results.toBuffer());
            });
      }
      default -> throw NOT_YET.contains(name)
          ? new ApiException(ErrorCode.INVALID_REQUEST, "Operation '" + name + "' is not supported by this version yet",
              new JsonObject().put("field", "op").put("op", name))
          : ApiException.invalid("op", "unknown operation '" + name + "'");
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
