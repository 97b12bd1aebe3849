package io.herald.testing;

import io.herald.store.RedisProcess;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * A real Redis for one test class: {@code redis-server} from the PATH when there is one, else the
 * binary shipped in the embedded-redis jar; a free port, a fresh data directory, AOF on.
 */
public final class TestRedis implements AutoCloseable {
  private final RedisProcess process;

  private TestRedis(RedisProcess process) {
    this.process = process;
  }

  public static TestRedis start() {
    return start("everysec");
  }

  public static TestRedis start(String appendfsync) {
    try {
      Path dir = Files.createTempDirectory("herald-redis-");
      return new TestRedis(RedisProcess.start(executable(), dir, 0, appendfsync));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static File executable() {
    String path = System.getenv().getOrDefault("PATH", "");
    return Stream.of(path.split(File.pathSeparator))
        .map(dir -> new File(dir, "redis-server"))
        .filter(File::canExecute)
        .findFirst()
        .orElseGet(RedisProcess::embeddedExecutable);
  }

  public String url() {
    return process.url();
  }

  /** SIGKILL, as in a crash. */
  public void kill() {
    process.kill();
  }

  /** SIGSTOP: Redis keeps its sockets open but answers nothing, as a hung server would. */
  public void pause() {
    signal("STOP");
  }

  /** SIGCONT after {@link #pause()}. */
  public void resume() {
    signal("CONT");
  }

  private void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.handle().pid())).start();
      if (kill.waitFor() != 0) {
        throw new IllegalStateException("kill -" + name + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** Starts it again on the same port and data directory. */
  public void restart() {
    process.start();
  }

  @Override
  public void close() {
    process.close();
  }
}
