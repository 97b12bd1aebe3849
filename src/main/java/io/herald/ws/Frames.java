package io.herald.ws;

import io.herald.protocol.ApiException;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonObject;

/** The gateway's WebSocket frames: one JSON object each, typed, with the request's requestId. */
final class Frames {
  private Frames() {}

  /** {@code {"type":..,"requestId":.., <the members of body>}}; body is a JSON object or null. */
  static Buffer frame(String type, Object requestId, Buffer body) {
    Buffer frame = Buffer.buffer().appendString("{\"type\":\"").appendString(type).appendString("\"");
    if (requestId != null) {
      frame.appendString(",\"requestId\":").appendString(Json.encode(requestId));
    }
    if (body != null && body.length() > 2) {
      frame.appendString(",").appendBuffer(body, 1, body.length() - 1);
    } else {
      frame.appendString("}");
    }
    return frame;
  }

  /** The protocol's WebSocket error: {@code {"type":"error","status":..,"code":..,"message":..}}. */
  static void sendError(ServerWebSocket socket, Object requestId, ApiException error) {
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

  static void send(ServerWebSocket socket, Buffer frame) {
    if (!socket.isClosed()) {
      socket.writeTextMessage(frame.toString());
    }
  }
}
