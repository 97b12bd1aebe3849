package io.herald.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/**
 * A WebSocket client written straight onto a socket, without buffers of its own: it writes only
 * what the connection takes and reads only when asked, as a client that stops reading would, so a
 * test sees the server's backpressure as TCP shows it.
 */
public final class RawWebSocket implements AutoCloseable {
  private final SocketChannel channel;
  private final Selector selector;
  private final ByteBuffer inbound = ByteBuffer.allocate(1 << 20);

  private RawWebSocket(SocketChannel channel, Selector selector) {
    this.channel = channel;
    this.selector = selector;
  }

  /** Opens {@code path} on {@code port} and completes the upgrade. */
  public static RawWebSocket connect(int port, String path) {
    try {
      SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
      String key = Base64.getEncoder().encodeToString("herald-raw-socket".getBytes(StandardCharsets.US_ASCII));
      channel.write(ByteBuffer.wrap(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port
          + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key
          + "\r\nSec-WebSocket-Version: 13\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
      ByteBuffer head = ByteBuffer.allocate(4096);
      while (!new String(head.array(), 0, head.position(), StandardCharsets.US_ASCII).contains("\r\n\r\n")) {
        if (channel.read(head) < 0) {
          throw new IOException("closed during the upgrade");
        }
      }
      String response = new String(head.array(), 0, head.position(), StandardCharsets.US_ASCII);
      if (!response.startsWith("HTTP/1.1 101")) {
        throw new IOException("upgrade refused: " + response.lines().findFirst().orElse(""));
      }
      int end = response.indexOf("\r\n\r\n") + 4;
      RawWebSocket socket = new RawWebSocket(channel, Selector.open());
      socket.inbound.put(head.array(), end, head.position() - end);
      channel.configureBlocking(false);
      return socket;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A client text frame (masked, with a zero mask, as RFC 6455 allows). */
  public static byte[] textFrame(String text) {
    byte[] payload = text.getBytes(StandardCharsets.UTF_8);
    if (payload.length > 65535) {
      throw new IllegalArgumentException("frames up to 64 KiB");
    }
    ByteBuffer frame = ByteBuffer.allocate(payload.length + 8);
    frame.put((byte) 0x81);
    if (payload.length < 126) {
      frame.put((byte) (0x80 | payload.length));
    } else {
      frame.put((byte) (0x80 | 126)).putShort((short) payload.length);
    }
    frame.putInt(0).put(payload);
    byte[] bytes = new byte[frame.position()];
    frame.flip().get(bytes);
    return bytes;
  }

  /**
   * Writes {@code out} while the connection takes it, reading nothing; returns once it is all
   * written or once the connection took nothing for {@code stall}.
   */
  public void writeWithoutReading(ByteBuffer out, Duration stall) {
    try {
      SelectionKey key = channel.register(selector, SelectionKey.OP_WRITE);
      while (out.hasRemaining()) {
        if (channel.write(out) == 0 && selector.select(stall.toMillis()) == 0) {
          break;
        }
        selector.selectedKeys().clear();
      }
      key.cancel();
      selector.selectNow();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Writes the rest of {@code out} and reads the server's text frames until {@code frames} of them
   * came; returns how many of those contain {@code marker}. Fails if nothing moves for 10 s.
   */
  public int exchange(ByteBuffer out, int frames, String marker) {
    int read = 0;
    int marked = 0;
    try {
      SelectionKey key = channel.register(selector, SelectionKey.OP_READ | SelectionKey.OP_WRITE);
      while (read < frames) {
        key.interestOps(out.hasRemaining() ? SelectionKey.OP_READ | SelectionKey.OP_WRITE : SelectionKey.OP_READ);
        if (selector.select(10_000) == 0 && inbound.position() == 0) {
          throw new AssertionError("nothing moved for 10 s after " + read + " frames");
        }
        selector.selectedKeys().clear();
        if (out.hasRemaining()) {
          channel.write(out);
        }
        if (channel.read(inbound) < 0) {
          throw new AssertionError("closed by the server after " + read + " frames");
        }
        inbound.flip();
        String text;
        while (read < frames && (text = nextFrame()) != null) {
          read++;
          marked += text.contains(marker) ? 1 : 0;
        }
        inbound.compact();
      }
      key.cancel();
      selector.selectNow();
      return marked;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The next whole (unmasked, unfragmented) server frame's text in {@code inbound}, or null. */
  private String nextFrame() {
    inbound.mark();
    if (inbound.remaining() < 2) {
      return null;
    }
    inbound.get();
    int length = inbound.get() & 0x7f;
    if (length == 126) {
      if (inbound.remaining() < 2) {
        inbound.reset();
        return null;
      }
      length = inbound.getShort() & 0xffff;
    } else if (length == 127) {
      if (inbound.remaining() < 8) {
        inbound.reset();
        return null;
      }
      length = (int) inbound.getLong();
    }
    if (inbound.remaining() < length) {
      inbound.reset();
      return null;
    }
    byte[] payload = new byte[length];
    inbound.get(payload);
    return new String(payload, StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    try {
      selector.close();
      channel.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
