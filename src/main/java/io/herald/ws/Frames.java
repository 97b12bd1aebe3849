package io.herald.ws;

import io.herald.protocol.ApiException;
import io.herald.vertx.VertxInternals;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;

/**
 * The gateway's WebSocket frames: one JSON object each, typed, with the request's requestId; sent
 * in frames of at most the gateway's WebSocket frame size.
 */
final class Frames {
  private final int maxFrameBytes;

  Frames(int maxFrameBytes) {
    this.maxFrameBytes = maxFrameBytes;
  }

  /** {@code {"type":..,"requestId":.., <the members of body>}}; body is a JSON object or null. */
  static Buffer frame(String type, Object requestId, Buffer body) {
    String id = requestId == null ? null : Json.encode(requestId);
    // sized once: a batch's frame is the batch's whole JSON again, and growing it copies it each time
    Buffer frame = Buffer.buffer(32 + type.length() + (id == null ? 0 : id.length()) + (body == null ? 0 : body.length()))
        .appendString("{\"type\":\"").appendString(type).appendString("\"");
    if (id != null) {
      frame.appendString(",\"requestId\":").appendString(id);
    }
    if (body != null && body.length() > 2) {
      frame.appendString(",").appendBuffer(body, 1, body.length() - 1);
    } else {
      frame.appendString("}");
    }
    return frame;
  }

  /** The protocol's WebSocket error: {@code {"type":"error","status":..,"code":..,"message":..}}. */
  void sendError(ServerWebSocket socket, Object requestId, ApiException error) {
    JsonObject frame = new JsonObject().put("type", "error").put("status", error.code().status())
        .put("code", error.code().name()).put("message", error.getMessage());
    if (error.details() != null) {
      frame.put("details", error.details());
    }
    if (requestId != null) {
      frame.put("requestId", requestId);
    }
    send(socket, frame.toBuffer());
  }

  void send(ServerWebSocket socket, Buffer frame) {
    if (!socket.isClosed() && !VertxInternals.writeText(socket, frame, maxFrameBytes)) {
      socket.writeTextMessage(frame.toString());
    }
  }
}
