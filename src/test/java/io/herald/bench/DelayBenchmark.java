package io.herald.bench;

import io.herald.testing.RedisCli;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: how late delayed events are handed out with many of them waiting, on one gateway
 * process (the fat jar) and a real Redis (AOF, fsync every second).
 *
 * <pre>bench/delay [events=1000000] [spreadSeconds=3600] [measureSeconds=120]</pre>
 *
 * Publishes {@code events} events over 10 consumers, each with a {@code deliverAt} drawn uniformly
 * from the {@code spreadSeconds} that start 60 s after the first publish; then long polls (two per
 * consumer) take and ack what comes due during the first {@code measureSeconds} of that spread.
 * Lateness is the time from an event's {@code deliverAt} to its hand-out, both by Redis' clock.
 */
public final class DelayBenchmark {
  private static final int CONSUMERS = 10;
  private static final long ACK_TIMEOUT_MS = 30_000;
  private static final long LEAD_MS = 60_000;

  public static void main(String[] args) throws Exception {
    int total = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    long spreadMs = (args.length > 1 ? Long.parseLong(args[1]) : 3600) * 1000;
    long measureMs = (args.length > 2 ? Long.parseLong(args[2]) : 120) * 1000;
    try (BenchGateway gateway = BenchGateway.start()) {
      BenchClient client = new BenchClient(gateway);
      List<String> consumers = new ArrayList<>();
      for (int c = 0; c < CONSUMERS; c++) {
        consumers.add(client.createConsumer("delay/" + c, new JsonObject().put("ackTimeoutMs", ACK_TIMEOUT_MS)));
      }
      // Redis' clock, read once: the local clock plus this offset stands for it from then on
      long offset = RedisCli.millis(gateway.redisUrl()) - System.currentTimeMillis();
      RedisTime redisTime = () -> System.currentTimeMillis() + offset;
      long base = redisTime.now() + LEAD_MS;
      long loadStart = System.nanoTime();
      Promise<Void> published = Promise.promise();
      client.vertx.runOnContext(v -> publishAll(client, total, base, spreadMs).onComplete(published));
      published.future().await();
      long loadedAt = redisTime.now();
      System.out.printf("published %,d delayed events in %.1f s, due from %.1f s after that over %d s%n", total,
          (System.nanoTime() - loadStart) / 1e9, (base - loadedAt) / 1e3, spreadMs / 1000);
      if (loadedAt > base) {
        System.out.println("warning: the publishes ended after the first events were due");
      }

      long measureEnd = base + measureMs;
      long[] lateness = new long[total];
      AtomicLong measured = new AtomicLong();
      List<Promise<Void>> pollers = new ArrayList<>();
      for (int p = 0; p < 2 * CONSUMERS; p++) {
        pollers.add(Promise.promise());
      }
      client.vertx.runOnContext(v -> {
        for (int p = 0; p < pollers.size(); p++) {
          take(client, consumers.get(p % CONSUMERS), redisTime, measureEnd, lateness, measured, pollers.get(p));
        }
      });
      Future.all(pollers.stream().map(Promise::future).toList()).await();
      long[] sorted = Arrays.stream(lateness, 0, (int) Math.min(total, measured.get())).sorted().toArray();
      long dueInWindow = Math.round((double) total * measureMs / spreadMs);
      System.out.printf("lateness   %,d delayed events due in the first %d s (about %,d expected): deliverAt to hand-out"
          + " p50 %d ms, p99 %d ms, max %d ms%n", sorted.length, measureMs / 1000, dueInWindow,
          BenchClient.at(sorted, 50), BenchClient.at(sorted, 99), sorted[sorted.length - 1]);
    }
    System.exit(0);
  }

  /** Requests of 100 events, round-robin over the consumers' topics (see {@link BenchClient#publishEach}). */
  private static Future<Void> publishAll(BenchClient client, int total, long base, long spreadMs) {
    SplittableRandom random = new SplittableRandom(42);
    return client.publishEach(total, first -> "delay/" + (first / BenchClient.EVENTS_PER_REQUEST) % CONSUMERS, i -> {
      long deliverAt = base + random.nextLong(spreadMs);
      return new JsonObject().put("payload", new JsonObject().put("due", deliverAt)).put("deliverAt", deliverAt);
    });
  }

  /** Redis' clock in ms. */
  private interface RedisTime {
    long now();
  }

  /**
   * Long-polls and acks until Redis' clock is 2 s past {@code measureEnd}, recording the lateness
   * of the events due by then.
   */
  private static void take(BenchClient client, String consumer, RedisTime redisTime, long measureEnd, long[] lateness,
      AtomicLong measured, Promise<Void> done) {
    Buffer poll = new JsonObject().put("maxEvents", 1000).put("waitMs", 1000).toBuffer();
    client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll", poll)
        .compose(batch -> {
          JsonArray events = batch.getJsonArray("events");
          for (Object item : events) {
            JsonObject event = (JsonObject) item;
            long due = event.getJsonObject("payload").getLong("due");
            if (due <= measureEnd) {
              int at = (int) measured.getAndIncrement();
              lateness[at] = event.getLong("ackDeadline") - ACK_TIMEOUT_MS - due;
            }
          }
          boolean over = redisTime.now() > measureEnd + 2000;
          return events.isEmpty() ? Future.succeededFuture(over)
              : client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks",
                  new JsonObject().put("batchAckIds", new JsonArray().add(batch.getString("batchAckId"))).toBuffer())
                  .map(over);
        })
        .onSuccess(over -> {
          if (over) {
            done.tryComplete();
          } else {
            take(client, consumer, redisTime, measureEnd, lateness, measured, done);
          }
        })
        .onFailure(done::tryFail);
  }
}
