package io.herald.testing;

import io.herald.store.RedisProcess;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * A real Redis for one test class: {@code redis-server} from the PATH when there is one, else the
 * binary shipped in the embedded-redis jar (see {@link #executable()}); a free port, a fresh data
 * directory, AOF on.
 */
public final class TestRedis implements AutoCloseable {
  private final RedisProcess process;
  private final Path dir;

  private TestRedis(RedisProcess process, Path dir) {
    this.process = process;
    this.dir = dir;
  }

  public static TestRedis start() {
    return start("everysec");
  }

  public static TestRedis start(String appendfsync) {
    try {
      Path dir = Files.createTempDirectory("herald-redis-");
      // a replica's first sync (ReplicaWaitIT) starts at once, not after the 5 s Redis waits for more by default
      return new TestRedis(RedisProcess.start(executable(), dir, 0, appendfsync,
          List.of("--repl-diskless-sync-delay", "0")), dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A replica of {@code primary}, from the same binary, with a data directory of its own. */
  public static TestRedis startReplicaOf(TestRedis primary) {
    try {
      Path dir = Files.createTempDirectory("herald-replica-");
      TestRedis replica = new TestRedis(RedisProcess.start(executable(), dir, 0, "everysec",
          List.of("--replicaof", "127.0.0.1", String.valueOf(primary.process.port()))), dir);
      // its first sync done: from then on it acknowledges the primary's writes
      Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() ->
          RedisCli.send(replica.url(), Request.cmd(Command.INFO).arg("replication")).toString()
              .contains("master_link_status:up"));
      awaitAcknowledged(primary.url(), 1);
      return replica;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Waits until {@code replicas} replicas of the primary at {@code url} acknowledge its writes (a
   * replica just synced may take a while: it rewrites its AOF first), so that a test's first WAIT
   * does not time out on it.
   */
  static void awaitAcknowledged(String url, int replicas) {
    awaitAcknowledged(url, replicas, "herald-test:replicated");
  }

  /** As {@link #awaitAcknowledged(String, int)}, writing {@code key} (on a cluster, one the primary serves). */
  static void awaitAcknowledged(String url, int replicas, String key) {
    RedisCli.send(url, Request.cmd(Command.SET).arg(key).arg("1"));
    if (RedisCli.send(url, Request.cmd(Command.WAIT).arg(replicas).arg(30_000)).toInteger() < replicas) {
      throw new IllegalStateException("the replicas of " + url + " do not acknowledge its writes");
    }
  }

  /** The binary shipped in the embedded-redis jar (Redis 6.2), whatever the PATH holds. */
  public static TestRedis startEmbedded() {
    try {
      Path dir = Files.createTempDirectory("herald-redis-");
      return new TestRedis(RedisProcess.start(RedisProcess.embeddedExecutable(), dir, 0, "everysec"), dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * {@code redis-server} from the PATH, else the embedded binary; {@code -Dherald.test.redis=embedded}
   * takes the embedded one whatever the PATH holds, as on a machine with only a JDK.
   */
  static File executable() {
    if ("embedded".equals(System.getProperty("herald.test.redis"))) {
      return RedisProcess.embeddedExecutable();
    }
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

  public ProcessHandle process() {
    return process.handle();
  }

  /** SIGKILL, as in a crash. */
  public void kill() {
    process.kill();
  }

  /** SIGSTOP: Redis keeps its sockets open but answers nothing, as a hung server would. */
  public void pause() {
    Signals.send(process.handle(), "STOP");
  }

  /** SIGCONT after {@link #pause()}. */
  public void resume() {
    Signals.send(process.handle(), "CONT");
  }

  /** Starts it again on the same port and data directory. */
  public void restart() {
    process.start();
  }

  /** Stops Redis and deletes its data directory. */
  @Override
  public void close() {
    process.close();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
