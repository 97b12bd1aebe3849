package io.herald.testing;

import io.herald.store.RedisProcess;
import io.vertx.core.json.JsonArray;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * A Redis Sentinel set for one test class: a primary, two replicas and three sentinels (quorum 2),
 * real redis-server processes on free ports, each with a data directory of its own.
 */
public final class TestSentinels implements AutoCloseable {
  public static final String MASTER = "herald";
  private final Path root;
  /** The data servers by port: the primary first, until a failover moves it. */
  private final Map<Integer, RedisProcess> servers = new HashMap<>();
  private final List<RedisProcess> sentinels = new ArrayList<>();

  private TestSentinels(Path root) {
    this.root = root;
  }

  public static TestSentinels start() {
    return start(TestRedis.executable());
  }

  /** As {@link #start()}, every process run by {@code executable} (e.g. the embedded Redis 6.2). */
  public static TestSentinels start(File executable) {
    TestSentinels set;
    try {
      set = new TestSentinels(Files.createTempDirectory("herald-sentinels-"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      // (a replica's first sync starts at once, not after the 5 s Redis waits for more replicas by default)
      RedisProcess primary = RedisProcess.start(executable, set.root.resolve("primary"), 0, "everysec",
          List.of("--repl-diskless-sync-delay", "0"));
      set.servers.put(primary.port(), primary);
      for (int r = 1; r <= 2; r++) {
        RedisProcess replica = RedisProcess.start(executable, set.root.resolve("replica" + r), 0, "everysec",
            List.of("--replicaof", "127.0.0.1", String.valueOf(primary.port())));
        set.servers.put(replica.port(), replica);
      }
      for (int s = 1; s <= 3; s++) {
        Path dir = set.root.resolve("sentinel" + s);
        Files.createDirectories(dir);
        int port = RedisProcess.freePort();
        Path conf = dir.resolve("sentinel.conf");
        Files.writeString(conf, String.join("\n",
            "port " + port, "bind 127.0.0.1", "protected-mode no", "dir " + dir.toAbsolutePath(),
            "sentinel monitor " + MASTER + " 127.0.0.1 " + primary.port() + " 2",
            "sentinel down-after-milliseconds " + MASTER + " 1000",
            "sentinel failover-timeout " + MASTER + " 10000",
            "sentinel parallel-syncs " + MASTER + " 2", ""));
        set.sentinels.add(RedisProcess.startWith(executable, dir, port,
            List.of(conf.toAbsolutePath().toString(), "--sentinel")));
      }
      // both replicas synced: from then on they acknowledge the primary's writes
      Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() ->
          set.servers.values().stream().filter(server -> server != primary).allMatch(replica ->
              RedisCli.send(replica.url(), Request.cmd(Command.INFO).arg("replication")).toString()
                  .contains("master_link_status:up")));
      TestRedis.awaitAcknowledged(primary.url(), 2);
      // every sentinel knows both replicas (it learns them from the primary) before anyone relies on a failover
      Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() ->
          set.sentinels.stream().allMatch(s -> RedisCli.send(s.url(),
              Request.cmd(Command.SENTINEL).arg("REPLICAS").arg(MASTER)).size() == 2));
      return set;
    } catch (IOException | RuntimeException e) {
      // no redis-server outlives a set that did not start
      set.close();
      throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
    }
  }

  /** The sentinels' URLs, for {@code redis.endpoints}. */
  public JsonArray endpoints() {
    return new JsonArray(sentinels.stream().map(RedisProcess::url).toList());
  }

  /** Every process of the set (data servers and sentinels), e.g. for their CPU time. */
  public List<ProcessHandle> processes() {
    List<ProcessHandle> all = new ArrayList<>();
    servers.values().forEach(server -> all.add(server.handle()));
    sentinels.forEach(sentinel -> all.add(sentinel.handle()));
    return all;
  }

  /** The port of the primary, as the first sentinel names it. */
  public int primaryPort() {
    Response address = RedisCli.send(sentinels.get(0).url(),
        Request.cmd(Command.SENTINEL).arg("GET-MASTER-ADDR-BY-NAME").arg(MASTER));
    return address.get(1).toInteger();
  }

  public String primaryUrl() {
    return "redis://127.0.0.1:" + primaryPort();
  }

  /** Waits until every replica has taken all the primary wrote so far. */
  public void awaitReplicated() {
    long offset = replicationOffset(primaryUrl(), "master_repl_offset");
    Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() ->
        servers.keySet().stream().filter(port -> port != primaryPort())
            .allMatch(port -> replicationOffset("redis://127.0.0.1:" + port, "slave_repl_offset") >= offset));
  }

  private static long replicationOffset(String url, String field) {
    String info = RedisCli.send(url, Request.cmd(Command.INFO).arg("replication")).toString();
    return info.lines().filter(line -> line.startsWith(field + ":")).findFirst()
        .map(line -> Long.parseLong(line.substring(field.length() + 1).trim())).orElse(-1L);
  }

  /**
   * Has the sentinels promote a replica (the old primary becomes one of its replicas) and waits until
   * they name the new primary; returns its port.
   */
  public int failover() {
    int old = primaryPort();
    Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> RedisCli.send(sentinels.get(0).url(),
            Request.cmd(Command.SENTINEL).arg("FAILOVER").arg(MASTER)).toString().equals("OK"));
    return awaitNewPrimary(old);
  }

  /** SIGKILL of the primary, as in a crash; waits until the sentinels name a new one; returns its port. */
  public int killPrimary() {
    int old = primaryPort();
    servers.get(old).kill();
    return awaitNewPrimary(old);
  }

  private int awaitNewPrimary(int old) {
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> primaryPort() != old
            && RedisCli.send(primaryUrl(), Request.cmd(Command.ROLE)).get(0).toString().equals("master"));
    return primaryPort();
  }

  @Override
  public void close() {
    sentinels.forEach(RedisProcess::close);
    servers.values().forEach(RedisProcess::close);
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
