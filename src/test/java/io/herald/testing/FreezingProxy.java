package io.herald.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP proxy to a local port whose open connections can be frozen: they stay open but carry
 * nothing more, as behind a dead network path, while new connections work. Test code: one thread
 * per direction per connection.
 */
public final class FreezingProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int targetPort;
  private final List<Link> links = new CopyOnWriteArrayList<>();
  private final AtomicInteger closedByTarget = new AtomicInteger();
  private volatile byte[] freezeMarker;

  public FreezingProxy(int targetPort) {
    this.targetPort = targetPort;
    try {
      server = new ServerSocket(0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Thread acceptor = new Thread(this::accept, "freezing-proxy");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public String url() {
    return "redis://127.0.0.1:" + server.getLocalPort();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** How many connections the target closed from its side. */
  public int closedByTarget() {
    return closedByTarget.get();
  }

  /** From now on, every connection open at this moment carries nothing, in either direction. */
  public void freezeOpenConnections() {
    links.forEach(link -> link.frozen = true);
  }

  /**
   * From now on, nothing more is read from the target on the connections open at this moment, as
   * from a client that stopped reading: the target's writes back up in its own buffers.
   */
  public void stallOpenConnections() {
    links.forEach(link -> link.stalled = true);
  }

  /**
   * The next connection to send something containing {@code marker} (e.g. a script's SHA) freezes
   * right after it: the target gets it and acts on it, its answer is lost.
   */
  public void freezeAfter(String marker) {
    freezeMarker = marker.getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The next connection to send something containing any of {@code markers} (e.g. a script's
   * function name and SHA) stalls as it does: the target gets it and acts on it, and its answer,
   * with all that follows, is held until {@link #unstall()}.
   */
  public void stallAfter(String... markers) {
    stallMarkers = java.util.Arrays.stream(markers).map(m -> m.getBytes(StandardCharsets.US_ASCII)).toList();
  }

  /**
   * The next connection to send something containing any of {@code markers} holds it, and all it
   * sends after it, until {@link #releaseHeld()}: the target gets none of it meanwhile.
   */
  public void holdBefore(String... markers) {
    holdLatch = new java.util.concurrent.CountDownLatch(1);
    holdMarkers = java.util.Arrays.stream(markers).map(m -> m.getBytes(StandardCharsets.US_ASCII)).toList();
  }

  /** Whether a connection holds what it sent since {@link #holdBefore}. */
  public boolean holding() {
    return holdLatch != null && holdMarkers == null && holdLatch.getCount() > 0;
  }

  /** Lets a connection held by {@link #holdBefore} go on. */
  public void releaseHeld() {
    holdLatch.countDown();
  }

  private volatile List<byte[]> holdMarkers;
  private volatile java.util.concurrent.CountDownLatch holdLatch;

  /** Reads from the target again after {@link #stallOpenConnections()}. */
  public void unstall() {
    links.forEach(link -> link.stalled = false);
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket target = new Socket("127.0.0.1", targetPort);
        Link link = new Link();
        links.add(link);
        pump(link, client, target, false, () -> { }, this);
        pump(link, target, client, true, closedByTarget::incrementAndGet, this);
      } catch (IOException e) {
        return;
      }
    }
  }

  private volatile List<byte[]> stallMarkers;

  private static void pump(Link link, Socket from, Socket to, boolean fromTarget, Runnable onEnd, FreezingProxy proxy) {
    Thread thread = new Thread(() -> {
      byte[] buffer = new byte[16384];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int read;
        while (true) {
          while (fromTarget && link.stalled && !from.isClosed()) {
            LockSupport.parkNanos(1_000_000); // a stalled reader: poll the flag, read nothing
          }
          if ((read = in.read(buffer)) < 0) {
            break;
          }
          // what a read under way when the stall began brought is held too: it would slip through
          while (fromTarget && link.stalled && !from.isClosed()) {
            LockSupport.parkNanos(1_000_000);
          }
          List<byte[]> stallOn = proxy.stallMarkers;
          int length = read;
          List<byte[]> holdOn = proxy.holdMarkers;
          if (!fromTarget && holdOn != null && holdOn.stream().anyMatch(marker -> contains(buffer, length, marker))) {
            proxy.holdMarkers = null;
            try {
              proxy.holdLatch.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              return;
            }
          }
          if (!fromTarget && stallOn != null && stallOn.stream().anyMatch(marker -> contains(buffer, length, marker))) {
            // before it reaches the target: its answer cannot slip through
            proxy.stallMarkers = null;
            link.stalled = true;
          }
          if (!link.frozen) {
            out.write(buffer, 0, read);
            out.flush();
            byte[] marker = proxy.freezeMarker;
            if (!fromTarget && marker != null && contains(buffer, read, marker)) {
              proxy.freezeMarker = null;
              link.frozen = true;
            }
          }
        }
        onEnd.run();
      } catch (IOException ignored) {
        // one side closed: the pump ends
      }
    }, "freezing-proxy-pump");
    thread.setDaemon(true);
    thread.start();
  }

  private static boolean contains(byte[] buffer, int length, byte[] marker) {
    outer:
    for (int i = 0; i + marker.length <= length; i++) {
      for (int j = 0; j < marker.length; j++) {
        if (buffer[i + j] != marker[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static final class Link {
    volatile boolean frozen;
    volatile boolean stalled;
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
