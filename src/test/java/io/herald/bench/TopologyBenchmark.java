package io.herald.bench;

import io.herald.store.HashSlots;
import io.herald.testing.RedisCli;
import io.herald.testing.TestCluster;
import io.herald.testing.TestRedis;
import io.herald.testing.TestSentinels;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: Herald (the fat jar, one node) on one Redis, on a Sentinel set (1 primary, 2
 * replicas) and on a Redis Cluster (3 primaries, 1 replica each), the last two with and without
 * {@code redis.waitReplicas: 1}; every Redis server on AOF everysec.
 *
 * <pre>bench/topologies [events=60000] [rounds=1] [topologies=standalone,sentinel,sentinel-wait,cluster,cluster-wait] [consumers=30]</pre>
 *
 * A topology named with {@code -quotas} at its end (e.g. {@code cluster-quotas}) runs with a
 * gateway-wide spool quota and maxUnackedTotal, so that the spool ledger (one slot) is asked too.
 *
 * {@code consumers} consumers, each of its own topic; {@code events} events published in
 * requests of 100 spread over the topics, each consumer polling batches of up to 100 (long polls)
 * and acking each batch by its batchAckId, after a warm-up of a quarter as many. Prints consumed+acked events/s, the CPU per event of the
 * gateway and of all Redis servers together (replicas and sentinels included), and each primary's
 * share of the script calls (INFO commandstats: fcall, evalsha, eval) with how many of the
 * consumers' keys it holds: the per-consumer calls follow the consumers, whose names hash to the
 * shards unevenly (30 names: 10 ± 3 a shard).
 */
public final class TopologyBenchmark {
  private static int consumerCount = 30;

  public static void main(String[] args) throws Exception {
    int events = args.length > 0 ? Integer.parseInt(args[0]) : 60_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    List<String> topologies = List.of((args.length > 2 ? args[2]
        : "standalone,sentinel,sentinel-wait,cluster,cluster-wait").split(","));
    consumerCount = args.length > 3 ? Integer.parseInt(args[3]) : consumerCount;
    System.out.println("topology       round  events/s  gateway µs/event  redis µs/event"
        + "  script calls per primary: per-consumer + others (share) [consumers there]");
    for (int round = 1; round <= rounds; round++) {
      for (String topology : topologies) {
        run(topology, round, events);
      }
    }
    System.exit(0);
  }

  private static void run(String topology, int round, int events) throws Exception {
    int wait = topology.endsWith("-wait") ? 1 : 0;
    if (topology.startsWith("cluster")) {
      try (TestCluster cluster = TestCluster.start()) {
        JsonObject redis = new JsonObject().put("mode", "cluster").put("endpoints", cluster.endpoints())
            .put("waitReplicas", wait);
        measure(topology, round, events, redis, cluster.primaries(), cluster.processes());
      }
    } else if (topology.startsWith("sentinel")) {
      try (TestSentinels set = TestSentinels.start()) {
        JsonObject redis = new JsonObject().put("mode", "sentinel").put("endpoints", set.endpoints())
            .put("masterName", TestSentinels.MASTER).put("waitReplicas", wait);
        measure(topology, round, events, redis, List.of(set.primaryUrl()), set.processes());
      }
    } else {
      try (TestRedis one = TestRedis.start()) {
        measure(topology, round, events, new JsonObject().put("url", one.url()), List.of(one.url()),
            List.of(one.process()));
      }
    }
  }

  private static void measure(String topology, int round, int events, JsonObject redis, List<String> primaries,
      List<ProcessHandle> processes) throws Exception {
    JsonObject settings = new JsonObject().put("redis", redis.put("timeoutMs", 5000));
    if (topology.endsWith("-quotas")) {
      // quotas that span consumers (far above this load): every publish round and poll asks the spool ledger
      settings.put("quotas", new JsonObject().put("spoolBytes", 10_000_000_000L).put("maxUnackedTotal", 1_000_000));
    }
    String config = settings.encode();
    try (BenchGateway gateway = BenchGateway.startOn(config, primaries.get(0), processes)) {
      BenchClient client = new BenchClient(gateway);
      List<String> consumers = new ArrayList<>();
      for (int c = 0; c < consumerCount; c++) {
        consumers.add(client.createConsumer("load/" + c));
      }
      load(client, consumers, events / 4); // warm-up: the JIT, the connections
      long[][] before = scriptCalls(primaries);
      BenchClient.CpuTimes cpu = client.cpu();
      double seconds = load(client, consumers, events);
      BenchClient.CpuTimes after = client.cpu();
      long[][] calls = scriptCalls(primaries);
      long total = 0;
      for (int i = 0; i < calls.length; i++) {
        calls[i][0] -= before[i][0];
        calls[i][1] -= before[i][1];
        total += calls[i][0] + calls[i][1];
      }
      int[] held = consumersPerPrimary(primaries, consumers);
      StringBuilder shares = new StringBuilder();
      for (int i = 0; i < calls.length; i++) {
        long[] c = calls[i];
        shares.append(String.format("%,d+%,d (%.0f %%) [%d] ", c[0], c[1], 100.0 * (c[0] + c[1]) / total, held[i]));
      }
      System.out.printf("%-14s %5d %9.0f %17.1f %15.1f  %s%n", topology, round, events / seconds,
          (after.gateway() - cpu.gateway()) * 1e6 / events, (after.redis() - cpu.redis()) * 1e6 / events, shares);
    }
  }

  /**
   * Publishes {@code events} events over the consumers' topics and waits until all were acked and
   * every consumer's loop stopped (none still polling into the next phase).
   */
  private static double load(BenchClient client, List<String> consumers, int events) {
    long start = System.nanoTime();
    AtomicLong lastAck = new AtomicLong();
    AtomicLong acked = new AtomicLong();
    AtomicInteger polling = new AtomicInteger(consumers.size());
    Promise<Void> done = Promise.promise();
    client.vertx.runOnContext(v -> {
      for (String consumer : consumers) {
        consume(client, consumer, acked, events, polling, lastAck, done);
      }
      client.publishEach(events, first -> "load/" + (first / BenchClient.EVENTS_PER_REQUEST % consumerCount),
          i -> new JsonObject().put("payload", new JsonObject().put("i", i).put("pad", "x".repeat(200))))
          .onFailure(done::tryFail);
    });
    done.future().await();
    // from the first publish to the last ack (the loops then stop within a long poll's wait)
    return (lastAck.get() - start) / 1e9;
  }

  /**
   * Long polls of up to 100 events, each batch acked by its batchAckId, until {@code events} were
   * acked in all; the last loop to stop completes {@code done}.
   */
  private static void consume(BenchClient client, String consumer, AtomicLong acked, int events, AtomicInteger polling,
      AtomicLong lastAck, Promise<Void> done) {
    if (acked.get() >= events) {
      if (polling.decrementAndGet() == 0) {
        done.tryComplete();
      }
      return;
    }
    client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll",
            new JsonObject().put("maxEvents", 100).put("waitMs", 1000).toBuffer())
        .compose(batch -> {
          int size = batch.getJsonArray("events").size();
          if (size == 0) {
            return Future.succeededFuture();
          }
          Buffer ack = new JsonObject().put("batchAckIds", new JsonArray().add(batch.getString("batchAckId"))).toBuffer();
          return client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks", ack)
              .onSuccess(ok -> {
                acked.addAndGet(size);
                lastAck.set(System.nanoTime());
              });
        })
        .onComplete(next -> {
          if (next.failed()) {
            done.tryFail(next.cause());
          } else {
            consume(client, consumer, acked, events, polling, lastAck, done);
          }
        });
  }

  /** Per primary, how many of the consumers' keys it holds (all of them outside a cluster). */
  private static int[] consumersPerPrimary(List<String> primaries, List<String> consumers) {
    int[] held = new int[primaries.size()];
    if (primaries.size() == 1) {
      held[0] = consumers.size();
      return held;
    }
    Response ranges = RedisCli.send(primaries.get(0), Request.cmd(Command.CLUSTER).arg("SLOTS"));
    for (String consumer : consumers) {
      int slot = HashSlots.of(("herald:{c:" + consumer + "}:meta").getBytes(StandardCharsets.UTF_8));
      for (Response range : ranges) {
        if (range.get(0).toInteger() <= slot && slot <= range.get(1).toInteger()) {
          held[primaries.indexOf("redis://127.0.0.1:" + range.get(2).get(1).toInteger())]++;
        }
      }
    }
    return held;
  }

  /**
   * Per primary, its calls of the per-consumer scripts (functions: fcall) and of the others (the
   * due index, the ledger, idempotency claims: evalsha, eval).
   */
  private static long[][] scriptCalls(List<String> primaries) {
    long[][] calls = new long[primaries.size()][];
    for (int i = 0; i < calls.length; i++) {
      String url = primaries.get(i);
      calls[i] = new long[] {RedisCli.calls(url, "fcall"), RedisCli.calls(url, "evalsha") + RedisCli.calls(url, "eval")};
    }
    return calls;
  }
}
