package io.herald.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy to a node that holds what clients send for {@code delay} before passing it on (what the
 * node sends comes back at once): a client's frames reach the node late. {@link #pause} holds what
 * clients send until {@link #cut}, which drops every connection with what it still holds and passes
 * on again; {@link #held} counts the chunks held now.
 */
final class SlowProxy implements AutoCloseable {
  private final URI target;
  private final long delayMs;
  private final ServerSocket server;
  // one thread and one delay: chunks pass on in the order they came
  private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor(daemon("slow-proxy-later"));
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final AtomicInteger held = new AtomicInteger();
  /** While set, what clients send is kept until their connection is cut: never passed on. */
  private volatile boolean paused;
  private final AtomicInteger kept = new AtomicInteger();

  SlowProxy(String url, Duration delay) throws IOException {
    this.target = URI.create(url);
    this.delayMs = delay.toMillis();
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    daemon("slow-proxy-accept").newThread(this::accept).start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getLocalPort();
  }

  int held() {
    return held.get() + kept.get();
  }

  void pause() {
    paused = true;
  }

  void cut() {
    sockets.forEach(SlowProxy::quietlyClose);
    sockets.clear();
    kept.set(0);
    paused = false;
  }

  @Override
  public void close() throws IOException {
    server.close();
    cut();
    later.shutdownNow();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        sockets.add(client);
        Socket upstream;
        try {
          upstream = new Socket(target.getHost(), target.getPort());
        } catch (IOException e) {
          quietlyClose(client);
          continue;
        }
        sockets.add(upstream);
        daemon("slow-proxy-down").newThread(() -> copy(upstream, client)).start();
        daemon("slow-proxy-up").newThread(() -> hold(client, upstream)).start();
      } catch (IOException e) {
        // closed
      }
    }
  }

  /** The node's bytes, back at once. */
  private void copy(Socket from, Socket to) {
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      in.transferTo(out);
    } catch (IOException e) {
      // either side went
    } finally {
      quietlyClose(from);
      quietlyClose(to);
    }
  }

  /** The client's bytes, each chunk passed on {@code delayMs} after it came; its end too. */
  private void hold(Socket from, Socket to) {
    try (InputStream in = from.getInputStream()) {
      byte[] buffer = new byte[16 * 1024];
      for (int n; (n = in.read(buffer)) >= 0; ) {
        if (paused) {
          kept.incrementAndGet();
          continue;
        }
        byte[] chunk = Arrays.copyOf(buffer, n);
        held.incrementAndGet();
        passOnLater(() -> {
          held.decrementAndGet();
          to.getOutputStream().write(chunk);
        }, from, to);
      }
      passOnLater(to::shutdownOutput, from, to);
    } catch (IOException e) {
      quietlyClose(from);
      quietlyClose(to);
    }
  }

  private interface Pass {
    void run() throws IOException;
  }

  private void passOnLater(Pass pass, Socket from, Socket to) {
    try {
      later.schedule(() -> {
        try {
          pass.run();
        } catch (IOException e) {
          quietlyClose(from);
          quietlyClose(to);
        }
      }, delayMs, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // the proxy is closed
    }
  }

  private static void quietlyClose(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // already closed
    }
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return task -> {
      Thread thread = new Thread(task, name);
      thread.setDaemon(true);
      return thread;
    };
  }
}
