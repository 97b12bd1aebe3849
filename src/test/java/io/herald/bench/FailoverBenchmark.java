package io.herald.bench;

import io.herald.testing.LoadRun;
import io.herald.testing.Places;
import io.herald.testing.TestNode;
import io.herald.testing.TestSentinels;
import io.vertx.core.json.JsonObject;
import java.util.HashSet;
import java.util.Set;

/**
 * Not a test: what a kill -9 of the Redis primary under load costs on a Sentinel set (1 primary,
 * 2 replicas, 3 sentinels with down-after-milliseconds 1000), with and without
 * {@code redis.waitReplicas: 1}.
 *
 * <pre>bench/failover [rounds=3] [publishers=8] [eventsBefore=3000]</pre>
 *
 * Each round starts a fresh set and two gateway nodes (in this process), publishes through one
 * ({@code publishers} HTTP publishers, one event each) and polls, acks and nacks through the other
 * until {@code eventsBefore} publishes were confirmed, kills the primary, goes on until 1,000 more publishes were confirmed,
 * then counts on the new primary: confirmed events missing (neither held nor acked), acks answered
 * ACKED that were lost (the event held again), and the longest stop in confirmed publishes.
 */
public final class FailoverBenchmark {
  private static final String TOPIC = "orders";

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int publishers = args.length > 1 ? Integer.parseInt(args[1]) : 8;
    int before = args.length > 2 ? Integer.parseInt(args[2]) : 3000;
    System.out.println("waitReplicas round  confirmed/s  confirmed  lost  acked  acks lost  stop ms");
    for (int wait : new int[] {0, 1}) {
      for (int round = 1; round <= rounds; round++) {
        run(wait, round, publishers, before);
      }
    }
    System.exit(0);
  }

  private static void run(int waitReplicas, int round, int publishers, int before) {
    try (TestSentinels set = TestSentinels.start();
        TestNode a = TestNode.start(config(set, waitReplicas));
        TestNode b = TestNode.start(config(set, waitReplicas))) {
      a.http().putConsumer("billing", LoadRun.consumerSettings(TOPIC));
      LoadRun load = LoadRun.start(a.http(), TOPIC, b.http(), "billing", publishers);
      long started = System.nanoTime();
      load.awaitConfirmed(before);
      double rate = load.confirmed.size() / ((System.nanoTime() - started) / 1e9);
      set.killPrimary();
      load.awaitConfirmed(1000);
      load.stop();
      String primary = set.primaryUrl();
      int lost = 0;
      int acksLost = 0;
      Set<String> settled = new HashSet<>(load.confirmed);
      settled.removeAll(load.maybeAcked);
      for (String eventId : settled) {
        boolean held = Places.holds(primary, "billing", eventId);
        if (load.acked.contains(eventId) && held) {
          acksLost++;
        } else if (!load.acked.contains(eventId) && !held) {
          lost++;
        }
      }
      System.out.printf("%12d %5d %12.0f %10d %5d %6d %10d %8d%n", waitReplicas, round, rate, load.confirmed.size(),
          lost, load.acked.size(), acksLost, load.longestGapMs());
    }
  }

  private static JsonObject config(TestSentinels set, int waitReplicas) {
    return new JsonObject().put("redis", new JsonObject().put("mode", "sentinel").put("endpoints", set.endpoints())
        .put("masterName", TestSentinels.MASTER).put("waitReplicas", waitReplicas));
  }
}
