package io.herald.store;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import redis.embedded.core.ExecutableProvider;

/**
 * A redis-server child process: the embedded Redis of a zero-set-up node, and the real Redis the
 * tests start, stop and kill. AOF is always on so that a restart keeps what was confirmed.
 */
public final class RedisProcess implements AutoCloseable {
  private final File executable;
  private final Path dataDir;
  private final int port;
  /** What follows the executable on its command line, the port's placeholder {@code %port} replaced. */
  private final List<String> arguments;
  private Process process;

  private RedisProcess(File executable, Path dataDir, int port, List<String> arguments) {
    this.executable = executable;
    this.dataDir = dataDir;
    this.port = port;
    this.arguments = arguments.stream().map(a -> a.replace("%port", String.valueOf(port))).toList();
  }

  /** The redis-server binary shipped inside the embedded-redis jar. */
  public static File embeddedExecutable() {
    try {
      return ExecutableProvider.newJarResourceProvider().get();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot unpack the embedded redis-server", e);
    }
  }

  /** Starts redis-server on {@code port} (0: a free one) and waits until it answers PING. */
  public static RedisProcess start(File executable, Path dataDir, int port, String appendfsync) {
    return start(executable, dataDir, port, appendfsync, List.of());
  }

  /** As {@link #start(File, Path, int, String)}, with more options (e.g. {@code --replicaof host port}). */
  public static RedisProcess start(File executable, Path dataDir, int port, String appendfsync, List<String> more) {
    List<String> arguments = new ArrayList<>(List.of("--port", "%port", "--bind", "127.0.0.1",
        "--dir", dataDir.toAbsolutePath().toString(), "--appendonly", "yes", "--appendfsync", appendfsync,
        "--save", "", "--protected-mode", "no", "--daemonize", "no"));
    arguments.addAll(more);
    return startWith(executable, dataDir, port, arguments);
  }

  /**
   * Starts redis-server with exactly {@code arguments} ({@code %port} standing for the port, 0: a
   * free one), e.g. a sentinel's configuration file and {@code --sentinel}, and waits until it
   * answers PING.
   */
  public static RedisProcess startWith(File executable, Path dataDir, int port, List<String> arguments) {
    RedisProcess redis = new RedisProcess(executable, dataDir, port == 0 ? freePort() : port, arguments);
    redis.start();
    return redis;
  }

  public int port() {
    return port;
  }

  /** The running redis-server, e.g. to read its CPU time. */
  public synchronized ProcessHandle handle() {
    return process.toHandle();
  }

  public String url() {
    return "redis://127.0.0.1:" + port;
  }

  public synchronized void start() {
    try {
      Files.createDirectories(dataDir);
      List<String> command = new ArrayList<>(List.of(executable.getAbsolutePath()));
      command.addAll(arguments);
      process = new ProcessBuilder(command)
          .redirectErrorStream(true)
          .redirectOutput(dataDir.resolve("redis.log").toFile())
          .start();
      awaitReady();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start redis-server on port " + port, e);
    }
  }

  /** SIGKILL: whatever Redis had not written to its AOF is gone, as in a crash. */
  public synchronized void kill() {
    if (process != null) {
      process.destroyForcibly();
      waitFor();
    }
  }

  /** SIGTERM: Redis flushes its AOF and exits. */
  @Override
  public synchronized void close() {
    if (process != null) {
      process.destroy();
      waitFor();
    }
  }

  private void waitFor() {
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    process = null;
  }

  private void awaitReady() throws IOException {
    long giveUpAt = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < giveUpAt) {
      if (!process.isAlive()) {
        throw new IOException("redis-server exited: " + Files.readString(dataDir.resolve("redis.log")));
      }
      if (answersPing()) {
        return;
      }
      try {
        TimeUnit.MILLISECONDS.sleep(20); // polling a child process that has no readiness signal
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for redis-server", e);
      }
    }
    throw new IOException("redis-server did not answer on port " + port + " within 30 s");
  }

  private boolean answersPing() {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
      socket.setSoTimeout(1000);
      OutputStream out = socket.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      byte[] reply = new byte[7];
      int read = socket.getInputStream().read(reply);
      // while loading its AOF Redis answers -LOADING
      return read > 0 && reply[0] == '+';
    } catch (IOException e) {
      return false;
    }
  }

  /** A port no one listens on now. */
  public static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      socket.setReuseAddress(true);
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
