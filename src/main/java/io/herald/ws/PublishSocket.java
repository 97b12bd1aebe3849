package io.herald.ws;

import io.herald.auth.Caller;
import io.herald.protocol.ApiException;
import io.herald.protocol.JsonLimits;
import io.herald.publish.PublishRequest;
import io.herald.publish.PublishService;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonObject;
import java.util.Set;

/**
 * A publishing socket ({@code GET /v1/ws/publish}): {@code {"op":"publish","topic":..,"events":[..]}}
 * frames, each answered by a {@code publishResult} once stored, in any order. Many may be in flight;
 * past {@link #MAX_IN_FLIGHT}, or while its write queue is full, the socket stops reading until
 * answers go out, so a fast publisher cannot make the node queue without bound.
 */
final class PublishSocket {
  static final int MAX_IN_FLIGHT = 256;
  private static final Set<String> ENVELOPE = Set.of("op", "topic", "requestId");

  private final ServerWebSocket socket;
  private final Frames frames;
  private final PublishService publisher;
  /** Who opened the socket: each frame's topic must be among its grants. */
  private final Caller caller;
  private ReadGate gate;
  private boolean closed;

  PublishSocket(ServerWebSocket socket, Frames frames, PublishService publisher, Caller caller) {
    this.socket = socket;
    this.frames = frames;
    this.publisher = publisher;
    this.caller = caller;
  }

  void start() {
    gate = new ReadGate(socket, MAX_IN_FLIGHT, () -> {});
    socket.closeHandler(v -> closed = true);
    socket.textMessageHandler(text -> onFrame(Buffer.buffer(text)));
  }

  private void onFrame(Buffer frame) {
    PublishRequest request;
    try {
      request = PublishRequest.parse(frame, ENVELOPE);
    } catch (ApiException e) {
      frames.sendError(socket, requestIdOf(frame), e);
      gate.check();
      return;
    }
    Object requestId = request.envelope("requestId");
    Object op = request.envelope("op");
    Object topic = request.envelope("topic");
    Future<JsonObject> answer;
    try {
      if (!"publish".equals(op)) {
        throw ApiException.invalid("op", "a publishing socket takes only {\"op\":\"publish\"}");
      }
      if (!(topic instanceof String name)) {
        throw ApiException.invalid("topic", "is required");
      }
      caller.checkPublish(name);
      answer = publisher.publish(name, request);
    } catch (RuntimeException e) {
      answer = Future.failedFuture(e);
    }
    gate.started();
    answer.onComplete(done -> {
      if (!closed) {
        if (done.succeeded()) {
          frames.send(socket, Frames.frame("publishResult", requestId, done.result().toBuffer()));
        } else {
          frames.sendError(socket, requestId, ApiException.from(done.cause(), true));
        }
      }
      gate.answered();
    });
  }

  /** The requestId of a frame that failed to parse as a publish request, if it is JSON at all. */
  private static Object requestIdOf(Buffer frame) {
    try {
      return JsonLimits.object(frame, "frame").getValue("requestId");
    } catch (RuntimeException e) {
      return null;
    }
  }
}
