package io.herald.bench;

import io.herald.testing.RedisCli;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongFunction;

/**
 * Not a test: what polls cost with ordering by key when many events wait behind their keys, on one
 * gateway process (the fat jar) and a real Redis (AOF, fsync every second).
 *
 * <pre>bench/ordering [events=1000000] [keys=100000] [cycles=2000] [layouts=spread,one,none]</pre>
 *
 * Three consumers in turn, each filled with {@code events} events of 256-byte payloads, then
 * consumed by one client doing {@code cycles} rounds of poll (100) and batch ack, the next round
 * after the last's answer:
 * <ul>
 *   <li>spread: ordering "key", event i has key i mod {@code keys};
 *   <li>one key: ordering "key", every event has the same key (each poll gets its one event);
 *   <li>unordered: the spread consumer's events with ordering "none", for comparison.
 * </ul>
 * Prints per consumer the publish rate, Redis memory per spooled event, and the poll's latency
 * (request to answer) over the first and the second half of the rounds: bounded cost means the
 * halves agree however long the lines behind the keys are.
 */
public final class OrderingBenchmark {
  private static final int POLL_EVENTS = 100;

  public static void main(String[] args) throws Exception {
    int total = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int keys = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int cycles = args.length > 2 ? Integer.parseInt(args[2]) : 2000;
    List<String> layouts = List.of((args.length > 3 ? args[3] : "spread,one,none").split(","));
    try (BenchGateway gateway = BenchGateway.start()) {
      BenchClient client = new BenchClient(gateway);
      if (layouts.contains("spread")) {
        run(client, "spread over " + keys + " keys", "key", total, cycles, i -> "k" + (i % keys));
      }
      if (layouts.contains("one")) {
        run(client, "one key", "key", total, cycles, i -> "hot");
      }
      if (layouts.contains("none")) {
        run(client, "unordered (" + keys + " keys, ordering none)", "none", total, cycles, i -> "k" + (i % keys));
      }
    }
    System.exit(0);
  }

  private static void run(BenchClient client, String label, String ordering, int total, int cycles,
      LongFunction<String> keyOf) {
    String topic = "ordering/" + System.nanoTime();
    String consumer = client.createConsumer(topic, new JsonObject().put("ordering", ordering)
        .put("ackTimeoutMs", 600_000));
    String redis = client.gateway.redisUrl();
    // the consumer before was unlinked: its memory is freed in the background
    while (!RedisCli.send(redis, Request.cmd(Command.INFO).arg("memory")).toString().contains("lazyfree_pending_objects:0")) {
      Thread.onSpinWait();
    }
    long emptyBytes = RedisCli.usedMemory(redis);
    client.slowLog(true);
    long start = System.nanoTime();
    Promise<Void> published = Promise.promise();
    client.vertx.runOnContext(v -> publishAll(client, topic, total, keyOf).onComplete(published));
    published.future().await();
    double publishSeconds = (System.nanoTime() - start) / 1e9;
    long bytesPerEvent = (RedisCli.usedMemory(redis) - emptyBytes) / total;
    System.out.printf("%-40s published %,d in %.1f s (%,.0f/s), Redis %,d B per event%n", label, total,
        publishSeconds, total / publishSeconds, bytesPerEvent);
    client.slowLog(false);

    client.slowLog(true);
    long[] latencies = new long[cycles];
    long handed = 0;
    Buffer poll = new JsonObject().put("maxEvents", POLL_EVENTS).toBuffer();
    long consumeStart = System.nanoTime();
    for (int c = 0; c < cycles; c++) {
      long sent = System.nanoTime();
      JsonObject batch = client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll", poll).await();
      latencies[c] = System.nanoTime() - sent;
      JsonArray events = batch.getJsonArray("events");
      handed += events.size();
      if (!events.isEmpty()) {
        client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks",
            new JsonObject().put("batchAckIds", new JsonArray().add(batch.getString("batchAckId"))).toBuffer()).await();
      }
    }
    double consumeSeconds = (System.nanoTime() - consumeStart) / 1e9;
    System.out.printf("%-40s %,d rounds of poll %d + ack: %,d events, %,.0f events/s; poll latency first half %s,"
        + " second half %s%n", "", cycles, POLL_EVENTS, handed, handed / consumeSeconds,
        summary(Arrays.copyOfRange(latencies, 0, cycles / 2)), summary(Arrays.copyOfRange(latencies, cycles / 2, cycles)));
    client.slowLog(false);
    client.http.request(HttpMethod.DELETE, "/v1/admin/consumers/" + consumer).compose(r -> r.send()).await();
  }

  private static String summary(long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    return String.format("p50 %.2f ms, p99 %.2f ms, max %.2f ms", BenchClient.at(sorted, 50) / 1e6,
        BenchClient.at(sorted, 99) / 1e6, sorted[sorted.length - 1] / 1e6);
  }

  /** Requests of 100 events with their keys (see {@link BenchClient#publishEach}). */
  private static Future<Void> publishAll(BenchClient client, String topic, int total, LongFunction<String> keyOf) {
    String pad = "x".repeat(BenchClient.PAYLOAD_BYTES - 20);
    return client.publishEach(total, first -> topic,
        i -> new JsonObject().put("key", keyOf.apply(i)).put("payload", new JsonObject().put("i", i).put("pad", pad)));
  }
}
