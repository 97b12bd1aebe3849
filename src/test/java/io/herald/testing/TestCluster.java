package io.herald.testing;

import io.herald.store.RedisProcess;
import io.vertx.core.json.JsonArray;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * A Redis Cluster for one test: three primaries, each with one replica, real redis-server
 * processes on free ports (each with a data directory of its own, AOF on), made a cluster with
 * CLUSTER ADDSLOTS, MEET and REPLICATE (no redis-cli needed). cluster-node-timeout is 1 s, so a
 * replica takes over a dead primary within a few seconds; cluster-require-full-coverage is no (as
 * in k8s/cluster), so the other primaries serve their slots while one has nobody serving it.
 */
public final class TestCluster implements AutoCloseable {
  private static final int SHARDS = 3;
  private final Path root;
  private final List<RedisProcess> servers = new ArrayList<>();
  /** Servers killed and not started again. */
  private final Set<RedisProcess> down = ConcurrentHashMap.newKeySet();
  /** Servers stopped with SIGSTOP: a SIGTERM would wait for a SIGCONT. */
  private final Set<RedisProcess> hung = ConcurrentHashMap.newKeySet();

  private TestCluster(Path root) {
    this.root = root;
  }

  public static TestCluster start() {
    return start(TestRedis.executable());
  }

  /** As {@link #start()}, every process run by {@code executable} (e.g. the embedded Redis 6.2). */
  public static TestCluster start(File executable) {
    return start(executable, true);
  }

  /**
   * A cluster whose nodes know each other and their slots, returned before its primaries say
   * {@code cluster_state:ok}: as right after {@code redis-cli --cluster create}, a primary refuses
   * calls with keys for its first 2 seconds.
   */
  public static TestCluster forming() {
    return start(TestRedis.executable(), false);
  }

  private static TestCluster start(File executable, boolean settled) {
    TestCluster cluster;
    try {
      cluster = new TestCluster(Files.createTempDirectory("herald-cluster-"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    try {
      for (int n = 0; n < 2 * SHARDS; n++) {
        cluster.servers.add(RedisProcess.start(executable, cluster.root.resolve("node" + n), freeBusPort(), "everysec",
            List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
                "--cluster-require-full-coverage", "no", "--repl-diskless-sync-delay", "0")));
      }
      // the servers started last are a forming cluster's primaries: their first seconds are yet to come
      int primaries = settled ? 0 : SHARDS;
      for (int shard = 0; shard < SHARDS; shard++) {
        Request add = Request.cmd(Command.CLUSTER).arg("ADDSLOTS");
        int from = shard * 16384 / SHARDS;
        int to = (shard + 1) * 16384 / SHARDS;
        for (int slot = from; slot < to; slot++) {
          add.arg(slot);
        }
        RedisCli.send(cluster.servers.get(primaries + shard).url(), add);
      }
      String first = cluster.servers.get(0).url();
      cluster.servers.stream().skip(1).forEach(server -> RedisCli.send(first,
          Request.cmd(Command.CLUSTER).arg("MEET").arg("127.0.0.1").arg(server.port())));
      Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() ->
          cluster.servers.stream().allMatch(server -> clusterNodes(server.url()).size() == 2 * SHARDS));
      for (int shard = 0; shard < SHARDS; shard++) {
        String primaryId = RedisCli.send(cluster.servers.get(primaries + shard).url(), Request.cmd(Command.CLUSTER).arg("MYID"))
            .toString();
        RedisCli.send(cluster.servers.get(SHARDS - primaries + shard).url(), Request.cmd(Command.CLUSTER).arg("REPLICATE")
            .arg(primaryId));
      }
      if (!settled) {
        return cluster;
      }
      Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() ->
          cluster.servers.stream().allMatch(server -> clusterInfo(server.url()).contains("cluster_state:ok"))
              && cluster.servers.stream().skip(SHARDS).allMatch(replica ->
                  info(replica.url(), "replication").contains("master_link_status:up")));
      for (int shard = 0; shard < SHARDS; shard++) {
        TestRedis.awaitAcknowledged(cluster.servers.get(shard).url(), 1, cluster.keyOfShard(shard));
      }
      return cluster;
    } catch (RuntimeException e) {
      // no redis-server outlives a cluster that did not start
      cluster.close();
      throw e;
    }
  }

  /**
   * A free port whose cluster bus port (10000 above it, as Redis 6.2 has it) is free too, below
   * the ephemeral range.
   */
  private static int freeBusPort() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    while (true) {
      int port = random.nextInt(20_000, 30_000);
      if (isFree(port) && isFree(port + 10_000)) {
        return port;
      }
    }
  }

  private static boolean isFree(int port) {
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort() == port;
    } catch (IOException e) {
      return false;
    }
  }

  private static String info(String url, String section) {
    return RedisCli.send(url, Request.cmd(Command.INFO).arg(section)).toString();
  }

  private static String clusterInfo(String url) {
    return RedisCli.send(url, Request.cmd(Command.CLUSTER).arg("INFO")).toString();
  }

  private static List<String> clusterNodes(String url) {
    return RedisCli.send(url, Request.cmd(Command.CLUSTER).arg("NODES")).toString().lines()
        .filter(line -> !line.isBlank()).toList();
  }

  /** Every node's process, e.g. for their CPU time. */
  public List<ProcessHandle> processes() {
    return servers.stream().map(RedisProcess::handle).toList();
  }

  /** Every node's URL, for {@code redis.endpoints} (seeds). */
  public JsonArray endpoints() {
    return new JsonArray(servers.stream().map(RedisProcess::url).toList());
  }

  /** A key whose slot the {@code shard}th primary serves (as made by {@link #start}). */
  private String keyOfShard(int shard) {
    for (int n = 0; ; n++) {
      String key = "herald-test:{" + n + "}";
      int slot = slotOf(key);
      if (slot >= shard * 16384 / SHARDS && slot < (shard + 1) * 16384 / SHARDS) {
        return key;
      }
    }
  }

  /** The slot of a key, as the cluster hashes it. */
  public int slotOf(String key) {
    return RedisCli.send(servers.get(0).url(), Request.cmd(Command.CLUSTER).arg("KEYSLOT").arg(key)).toInteger();
  }

  /** The URL of the primary serving {@code slot}, as a live node tells it. */
  public String primaryOf(int slot) {
    for (RedisProcess server : servers) {
      if (down.contains(server)) {
        continue;
      }
      for (Response range : RedisCli.send(server.url(), Request.cmd(Command.CLUSTER).arg("SLOTS"))) {
        if (range.get(0).toInteger() <= slot && slot <= range.get(1).toInteger()) {
          return "redis://127.0.0.1:" + range.get(2).get(1).toInteger();
        }
      }
    }
    throw new IllegalStateException("no node serves slot " + slot);
  }

  /** The URLs of the primaries. */
  public List<String> primaries() {
    List<String> primaries = new ArrayList<>();
    for (int shard = 0; shard < SHARDS; shard++) {
      primaries.add(primaryOf(shard * 16384 / SHARDS));
    }
    return primaries;
  }

  /**
   * SIGKILL of the primary of {@code slot}, as in a crash; waits until its replica serves the slot
   * and every live node sees the cluster whole again; returns the new primary's URL.
   */
  public String killPrimaryOf(int slot) {
    String old = primaryOf(slot);
    RedisProcess victim = servers.stream().filter(server -> server.url().equals(old)).findFirst().orElseThrow();
    victim.kill();
    down.add(victim);
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> !primaryOf(slot).equals(old) && servers.stream().filter(server -> !down.contains(server))
            .allMatch(server -> clusterInfo(server.url()).contains("cluster_state:ok")));
    return primaryOf(slot);
  }

  /** SIGSTOP of the replica of the primary of {@code slot}: it takes nothing more of its writes. */
  public void pauseReplicaOf(int slot) {
    String primaryId = idOf(primaryOf(slot));
    RedisProcess replica = servers.stream().filter(server -> !down.contains(server) && clusterNodes(server.url()).stream()
        .anyMatch(line -> line.contains("myself") && line.contains("slave " + primaryId))).findFirst().orElseThrow();
    Signals.send(replica.handle(), "STOP");
    hung.add(replica);
    pausedReplica = replica;
  }

  private volatile RedisProcess pausedReplica;

  /**
   * SIGKILL of the primary of {@code slot} while its replica is paused ({@link #pauseReplicaOf}),
   * then SIGCONT of the replica: it is promoted without what the primary took last. Waits until it
   * serves the slot; returns its URL.
   */
  public String killPrimaryOfWithReplicaBehind(int slot) {
    String old = primaryOf(slot);
    RedisProcess victim = servers.stream().filter(server -> server.url().equals(old)).findFirst().orElseThrow();
    victim.kill();
    down.add(victim);
    RedisProcess replica = pausedReplica;
    Signals.send(replica.handle(), "CONT");
    hung.remove(replica);
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> !primaryOf(slot).equals(old) && servers.stream().filter(server -> !down.contains(server))
            .allMatch(server -> clusterInfo(server.url()).contains("cluster_state:ok")));
    return primaryOf(slot);
  }

  /**
   * SIGSTOP of the primary of {@code slot} and of its replica, as in a hung host: nobody serves its
   * slots. Waits until the other primaries see it failed.
   */
  public void hangShardOf(int slot) {
    String primary = primaryOf(slot);
    String primaryId = idOf(primary);
    List<RedisProcess> shard = servers.stream().filter(server -> !down.contains(server)).filter(server -> server.url().equals(primary)
        || clusterNodes(server.url()).stream().anyMatch(line -> line.contains("myself") && line.contains(primaryId))
    ).toList();
    shard.forEach(server -> Signals.send(server.handle(), "STOP"));
    hung.addAll(shard);
    down.addAll(shard);
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> servers.stream().filter(server -> !down.contains(server)).allMatch(server ->
            clusterNodes(server.url()).stream().anyMatch(line -> line.startsWith(primaryId) && line.contains("fail"))));
  }

  /**
   * Starts the server of {@code url} again after a kill, on its port and data (its nodes.conf
   * included): it rejoins as a replica of the primary that took its place. Waits until it took all
   * it missed.
   */
  public void restart(String url) {
    RedisProcess server = servers.stream().filter(s -> s.url().equals(url)).findFirst().orElseThrow();
    server.start();
    down.remove(server);
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> info(url, "replication").contains("master_link_status:up"));
  }

  /** Whether every primary says {@code cluster_state:ok}: it serves calls with keys. */
  public boolean primariesServe() {
    return primaries().stream().allMatch(url -> clusterInfo(url).contains("cluster_state:ok"));
  }

  /** The node id of the server at {@code url}. */
  public static String idOf(String url) {
    return RedisCli.send(url, Request.cmd(Command.CLUSTER).arg("MYID")).toString();
  }

  /**
   * Moves {@code slot} from its primary to {@code target} as redis-cli's resharding does: IMPORTING
   * on the target, MIGRATING on the source, its keys moved with MIGRATE 10 at a time (redis-cli's
   * default pipeline; {@code betweenSteps} runs after each step, so that a test can check in the
   * middle), then the slot given to the target on every primary.
   */
  public void migrate(int slot, String target, Runnable betweenSteps) {
    String source = primaryOf(slot);
    String sourceId = idOf(source);
    String targetId = idOf(target);
    int targetPort = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
    RedisCli.send(target, Request.cmd(Command.CLUSTER).arg("SETSLOT").arg(slot).arg("IMPORTING").arg(sourceId));
    RedisCli.send(source, Request.cmd(Command.CLUSTER).arg("SETSLOT").arg(slot).arg("MIGRATING").arg(targetId));
    while (true) {
      Response keys = RedisCli.send(source, Request.cmd(Command.CLUSTER).arg("GETKEYSINSLOT").arg(slot).arg(10));
      if (keys.size() == 0) {
        break;
      }
      Request migrate = Request.cmd(Command.MIGRATE).arg("127.0.0.1").arg(targetPort).arg("").arg(0).arg(5000)
          .arg("KEYS");
      keys.forEach(key -> migrate.arg(key.toString()));
      RedisCli.send(source, migrate);
      betweenSteps.run();
    }
    for (String primary : primaries()) {
      RedisCli.send(primary, Request.cmd(Command.CLUSTER).arg("SETSLOT").arg(slot).arg("NODE").arg(targetId));
    }
  }

  @Override
  public void close() {
    hung.forEach(RedisProcess::kill);
    servers.forEach(RedisProcess::close);
    try (Stream<Path> files = Files.walk(root)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
