package io.herald.vertx;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpConnection;
import io.vertx.core.http.WebSocketBase;
import io.vertx.core.http.WebSocketFrame;
import io.vertx.core.http.WebSocketFrameType;
import io.vertx.core.http.impl.ws.WebSocketFrameImpl;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.net.impl.ConnectionBase;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.impl.RequestImpl;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.util.List;

/**
 * Every place Herald relies on what Vert.x does not offer as API: its implementation classes and
 * the wording of its messages. Kept here, behind named operations with a test of their own
 * ({@code VertxInternalsIT}), so that a Vert.x upgrade that changes them fails one test, not the
 * gateway's behaviour in silence.
 */
public final class VertxInternals {
  private VertxInternals() {}

  /**
   * Ends a connection without a close frame, so that a WebSocket client sees 1006 (which RFC 6455
   * forbids sending): closes the channel from the head of its pipeline, below Vert.x' own handler,
   * which would send a close frame first. Returns false, doing nothing, when the connection is not
   * of the implementation class this knows.
   */
  public static boolean dropWithoutCloseFrame(HttpConnection connection) {
    if (connection instanceof ConnectionBase base) {
      ChannelHandlerContext first = base.channel().pipeline().firstContext();
      if (first != null) {
        first.close();
        return true;
      }
    }
    return false;
  }

  /**
   * Makes the writes a connection gets within one event-loop task leave in one system call: Vert.x
   * flushes every frame it writes outside of reading that connection (a publish confirm answering a
   * Redis reply, a pushed batch), and on this kind of machine a write call costs more than the frame.
   * Netty's FlushConsolidationHandler then flushes once, after the task. Returns false, doing
   * nothing, when the connection is not of the implementation class this knows.
   */
  public static boolean consolidateFlushes(HttpConnection connection) {
    if (connection instanceof ConnectionBase base) {
      base.channel().pipeline().addFirst(new FlushConsolidationHandler(
          FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES, true));
      return true;
    }
    return false;
  }

  /**
   * Writes a text message from its UTF-8 bytes, in frames of at most {@code maxFrameSize} bytes, as
   * {@code writeTextMessage} does from a String: without decoding the bytes into a String and
   * encoding it back (two copies of every frame the gateway sends). Returns false, writing nothing,
   * when the buffer is not of the implementation class this knows.
   */
  public static boolean writeText(WebSocketBase socket, Buffer utf8, int maxFrameSize) {
    if (!(utf8 instanceof BufferInternal bytes)) {
      return false;
    }
    int length = utf8.length();
    int offset = 0;
    do {
      int end = Math.min(length, offset + maxFrameSize);
      boolean last = end == length;
      Buffer piece = offset == 0 && last ? utf8 : bytes.slice(offset, end);
      socket.writeFrame(offset == 0
          ? new WebSocketFrameImpl(WebSocketFrameType.TEXT, ((BufferInternal) piece).getByteBuf(), last)
          : WebSocketFrame.continuationFrame(piece, last));
      offset = end;
    } while (offset < length);
    return true;
  }

  /**
   * The keys of a Redis command, as the client's table of commands locates them (for a script call,
   * those it declares), for routing it on a cluster.
   */
  public static List<byte[]> keysOf(Request request) {
    return ((RequestImpl) request).keys();
  }

  /**
   * Whether a failure of the Redis client is an error reply of Redis itself (the command ran, or was
   * refused). The client fails the commands still waiting on a connection that closed with an
   * error of the same class, CONNECTION_CLOSED: that is no reply of Redis (the outcome is unknown).
   */
  public static boolean isRedisErrorReply(Throwable failure) {
    return failure.getClass().getName().equals("io.vertx.redis.client.impl.types.ErrorType")
        && !"CONNECTION_CLOSED".equals(failure.getMessage());
  }

  /**
   * Whether a failure of the Redis client means no connection could be made, so nothing was sent:
   * a refused or failed connect, as the socket or the client's pool words it.
   */
  public static boolean isNotConnected(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      // (netty's unreachable host is a NoRouteToHostException, not a ConnectException)
      if (t instanceof ConnectException || t instanceof NoRouteToHostException) {
        return true;
      }
    }
    String message = String.valueOf(failure.getMessage());
    return message.contains("Connection refused") || message.contains("Cannot connect")
        || message.contains("No route to host");
  }
}
