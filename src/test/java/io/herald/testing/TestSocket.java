package io.herald.testing;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A WebSocket client as an outside user would have one: send JSON frames, read them in order. */
public final class TestSocket implements AutoCloseable {
  private static final Vertx VERTX = Vertx.vertx();
  private final WebSocketClient client;
  private final WebSocket socket;
  private final BlockingQueue<JsonObject> received = new LinkedBlockingQueue<>();
  private final Promise<Short> closeStatus = Promise.promise();

  private TestSocket(WebSocketClient client, WebSocket socket, String path) {
    this.client = client;
    this.socket = socket;
    // a node's sockets only (some tests talk to a bare Vert.x server)
    String channel = path.startsWith("/v1/ws/publish") ? "publisher" : path.startsWith("/v1/consumers/") ? "consumer" : null;
    socket.textMessageHandler(text -> {
      if (channel != null) {
        Traffic.recordFrame(channel, text);
      }
      received.add(new JsonObject(text));
    });
    socket.closeHandler(v -> closeStatus.tryComplete(socket.closeStatusCode()));
  }

  /** Connects to {@code path} on {@code port}; fails with the handshake's HTTP status if refused. */
  public static TestSocket connect(int port, String path) {
    // large frames and messages: batches of big events must reach the test, not trip the client
    return connect(port, path, 64 << 20);
  }

  /** As {@link #connect(int, String)}, with frames of at most {@code maxFrameBytes} each way. */
  public static TestSocket connect(int port, String path, int maxFrameBytes) {
    return connect(new WebSocketConnectOptions().setHost("127.0.0.1").setPort(port).setURI(path), maxFrameBytes);
  }

  /** As {@link #connect(int, String)}, as a browser page of {@code origin} would. */
  public static TestSocket connectFrom(String origin, int port, String path) {
    return connect(new WebSocketConnectOptions().setHost("127.0.0.1").setPort(port).setURI(path)
        .addHeader("Origin", origin), 64 << 20);
  }

  private static TestSocket connect(WebSocketConnectOptions options, int maxFrameBytes) {
    WebSocketClient client = VERTX.createWebSocketClient(new WebSocketClientOptions()
        .setMaxFrameSize(maxFrameBytes).setMaxMessageSize(64 << 20));
    try {
      WebSocket socket = client.connect(options).await();
      return new TestSocket(client, socket, options.getURI());
    } catch (RuntimeException e) {
      client.close();
      throw e;
    }
  }

  public void send(JsonObject frame) {
    socket.writeTextMessage(frame.encode()).await();
  }

  public void sendText(String text) {
    socket.writeTextMessage(text).await();
  }

  /** The next frame the server sent, waiting up to 10 s. */
  public JsonObject next() {
    JsonObject frame = next(10_000);
    if (frame == null) {
      throw new AssertionError("no frame within 10 s");
    }
    return frame;
  }

  /** The next frame the server sent, or null if none came within {@code waitMs}. */
  public JsonObject next(long waitMs) {
    try {
      return received.poll(waitMs, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public boolean isClosed() {
    return socket.isClosed();
  }

  /** The close code the server's close frame carried (null: closed without one), waiting up to 10 s. */
  public Short awaitClose() {
    return closeStatus.future().timeout(10, TimeUnit.SECONDS).await();
  }

  @Override
  public void close() {
    socket.close();
    client.close();
  }
}
