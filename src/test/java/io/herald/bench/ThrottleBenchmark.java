package io.herald.bench;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: what the rate limit costs, on one gateway process (the fat jar) and a real Redis (AOF,
 * fsync every second).
 *
 * <pre>bench/throttle [seconds=10]</pre>
 *
 * 1. Counting alone: the rate-limit step every poll runs (the {@code admit} script: trim the
 *    consumer's one-second log, count it, add the request) sent straight to Redis, 256 calls in
 *    flight on one pipelined connection; calls/s and Redis CPU per call. The same script asked only
 *    whether the consumer is blocked is the baseline: the difference is what counting costs.
 * 2. Through the node: empty polls ({@code waitMs} 0) from 32 concurrent HTTP clients, each
 *    counted and admitted; admitted requests/s and the CPU each process used.
 * Each for one consumer (its {@code tps} raised to 100,000 so that it stays admitted) and spread
 * round-robin over 10,000 consumers (default {@code tps} 100).
 */
public final class ThrottleBenchmark {
  private static final int IN_FLIGHT = 256;
  private static final int HTTP_CLIENTS = 32;
  private static final int MANY = 10_000;

  private final BenchClient client;
  private final long seconds;

  private ThrottleBenchmark(BenchClient client, long seconds) {
    this.client = client;
    this.seconds = seconds;
  }

  public static void main(String[] args) throws Exception {
    long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
    try (BenchGateway gateway = BenchGateway.start()) {
      ThrottleBenchmark bench = new ThrottleBenchmark(new BenchClient(gateway), seconds);
      List<String> one = List.of(bench.client.createConsumer("throttle/one", new JsonObject()
          .put("rateLimit", new JsonObject().put("tps", 100_000))));
      List<String> many = bench.createConsumers(MANY);
      String spread = String.format("%,d consumers", MANY);
      bench.counting("1 consumer", one, false);
      bench.counting("1 consumer", one, true);
      bench.counting(spread, many, false);
      bench.counting(spread, many, true);
      bench.polling("warm-up", many);
      bench.polling("1 consumer", one);
      bench.polling(spread, many);
    }
    System.exit(0);
  }

  private List<String> createConsumers(int count) {
    List<String> names = new ArrayList<>();
    List<Future<JsonObject>> created = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String name = "throttle-" + i;
      names.add(name);
      created.add(client.call(HttpMethod.PUT, "/v1/admin/consumers/" + name,
          new JsonObject().put("topics", new io.vertx.core.json.JsonArray().add("throttle/many")).toBuffer()));
      if (created.size() == 64) {
        Future.all(created).await();
        created.clear();
      }
    }
    Future.all(created).await();
    return names;
  }

  /** The admit script straight to Redis, round-robin over {@code consumers}; counted or only checking. */
  private void counting(String label, List<String> consumers, boolean counted) {
    RedisStore store = RedisStore.pipelined(client.vertx, client.gateway.redisUrl(), 10_000);
    List<List<String>> keys = consumers.stream().map(Keys::consumer).toList();
    BenchClient.CpuTimes before = client.cpu();
    AtomicLong calls = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    long start = System.nanoTime();
    long end = start + seconds * 1_000_000_000L;
    Promise<Void> done = Promise.promise();
    AtomicLong running = new AtomicLong(IN_FLIGHT);
    client.vertx.runOnContext(v -> {
      for (int i = 0; i < IN_FLIGHT; i++) {
        admitLoop(store, keys, counted, calls, refused, end, () -> {
          if (running.decrementAndGet() == 0) {
            done.complete();
          }
        });
      }
    });
    done.future().await();
    store.close().await();
    double elapsed = (System.nanoTime() - start) / 1e9;
    BenchClient.CpuTimes used = client.cpu();
    System.out.printf("%-10s %-16s %,.0f admit calls/s (%,d refused), Redis CPU %.1f µs per call (%s)%n",
        counted ? "counted" : "check only", label, calls.get() / elapsed, refused.get(),
        (used.redis() - before.redis()) * 1e6 / calls.get(), used.since(before));
  }

  private void admitLoop(RedisStore store, List<List<String>> keys, boolean counted, AtomicLong calls,
      AtomicLong refused, long end, Runnable finished) {
    if (System.nanoTime() >= end) {
      finished.run();
      return;
    }
    long call = calls.getAndIncrement();
    store.eval(Script.ADMIT, keys.get((int) (call % keys.size())), List.of(counted ? "b" + call : ""))
        .onComplete(reply -> {
          if (reply.failed() || reply.result().toLong() != 0) {
            refused.incrementAndGet();
          }
          admitLoop(store, keys, counted, calls, refused, end, finished);
        });
  }

  /** Empty HTTP polls through the node, round-robin over {@code consumers}. */
  private void polling(String label, List<String> consumers) {
    BenchClient.CpuTimes before = client.cpu();
    AtomicLong sent = new AtomicLong();
    AtomicLong admitted = new AtomicLong();
    long start = System.nanoTime();
    long end = start + seconds * 1_000_000_000L;
    Promise<Void> done = Promise.promise();
    AtomicLong running = new AtomicLong(HTTP_CLIENTS);
    client.vertx.runOnContext(v -> {
      for (int i = 0; i < HTTP_CLIENTS; i++) {
        pollLoop(consumers, sent, admitted, end, () -> {
          if (running.decrementAndGet() == 0) {
            done.complete();
          }
        });
      }
    });
    done.future().await();
    double elapsed = (System.nanoTime() - start) / 1e9;
    System.out.printf("polls      %-16s %,.0f polls/s admitted (%,d of %,d) (%s)%n",
        label, admitted.get() / elapsed, admitted.get(), sent.get(), client.cpu().since(before));
  }

  private void pollLoop(List<String> consumers, AtomicLong sent, AtomicLong admitted, long end, Runnable finished) {
    if (System.nanoTime() >= end) {
      finished.run();
      return;
    }
    String consumer = consumers.get((int) (sent.getAndIncrement() % consumers.size()));
    client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll", new JsonObject().toBuffer())
        .onComplete(reply -> {
          if (reply.succeeded()) {
            admitted.incrementAndGet();
          }
          pollLoop(consumers, sent, admitted, end, finished);
        });
  }
}
