package io.herald.bench;

import static org.awaitility.Awaitility.await;

import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;

/**
 * Not a test: what /metrics' per-consumer figures cost with many consumers, on the fat jar and a
 * real Redis.
 *
 * <pre>bench/gauges [consumers=10000]</pre>
 *
 * Creates the consumers, publishes 2 events to each and hands one of them out (so each has a
 * backlog, an unacked event and an oldest unacked age; an ack timeout of an hour, so that no
 * redelivery runs meanwhile), scrapes once so that passes begin, then
 * measures one pass from Redis' side (its FCALLs: calls, Redis CPU, how long the pass took) and the
 * scrapes that follow (bytes, time). Then keeps a console's live stream open for a minute: how often
 * its figures come, their size, and what the passes it makes cost Redis.
 */
public final class ConsumerGaugesBenchmark {
  /** The default consumerGaugesMs. */
  private static final long INTERVAL_MS = 30_000;
  private static final Duration WATCHED = Duration.ofSeconds(60);
  private static final int IN_FLIGHT = 32;
  /**
   * Set-up calls not answered within 10 s and made again: about one in several thousand of this
   * client's requests goes unanswered (not seen with other clients; see docs/benchmarks.md).
   */
  private static final java.util.concurrent.atomic.AtomicInteger RETRIED = new java.util.concurrent.atomic.AtomicInteger();

  public static void main(String[] args) throws Exception {
    int consumers = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    try (BenchGateway gateway = BenchGateway.start("{\"management\":{\"consumerGaugesMs\":" + INTERVAL_MS + "}}")) {
      BenchClient client = new BenchClient(gateway);
      long setUp = System.nanoTime();
      each(client, consumers, i -> client.call(HttpMethod.PUT, "/v1/admin/consumers/g" + i, new JsonObject()
          .put("topics", new JsonArray().add("gauges/" + i)).put("ackTimeoutMs", 3_600_000).toBuffer()));
      each(client, consumers, i -> client.call(HttpMethod.POST, "/v1/topics/gauges/" + i + "/events",
          new JsonObject().put("events", new JsonArray()
              // a publish tried again stores its events once
              .add(new JsonObject().put("payload", i).put("idempotencyKey", "a" + i))
              .add(new JsonObject().put("payload", -i).put("idempotencyKey", "b" + i))).toBuffer()));
      each(client, consumers, i -> client.call(HttpMethod.POST, "/v1/consumers/g" + i + "/poll",
          new JsonObject().put("maxEvents", 1).toBuffer()));
      System.out.printf("%,d consumers, each with 1 event in its backlog and 1 unacked, in %.1f s (%d calls tried"
          + " again)%n", consumers, (System.nanoTime() - setUp) / 1e9, RETRIED.get());

      Redis redis = Redis.createClient(client.vertx, gateway.redisUrl());
      int callsPerPass = (consumers + 19) / 20;
      // until the node's own calls of the set-up are over (the ledger reads the figures of every
      // consumer the polls touched): then the pass's calls are the only FCALLs
      long[][] seen = {fcalls(redis)};
      await().pollDelay(Duration.ofSeconds(2)).pollInterval(Duration.ofSeconds(2)).atMost(Duration.ofMinutes(5)).until(() -> {
        long[] last = seen[0];
        seen[0] = fcalls(redis);
        return seen[0][0] == last[0];
      });
      scrape(client);
      long[] before = fcalls(redis);
      long[] startedAt = {0};
      double cpuBefore = gateway.redisCpuSeconds();
      long[] now = await().pollInterval(Duration.ofMillis(5)).atMost(Duration.ofMinutes(5)).until(() -> {
        long[] read = fcalls(redis);
        if (startedAt[0] == 0 && read[0] > before[0]) {
          startedAt[0] = System.nanoTime();
        }
        return read;
      }, read -> read[0] - before[0] >= callsPerPass);
      double passMs = (System.nanoTime() - startedAt[0]) / 1e6;
      double cpu = gateway.redisCpuSeconds() - cpuBefore;
      System.out.printf("one pass: %,d FCALLs (%d expected), Redis %,d µs in them (%.0f µs a call, %.1f µs a consumer),"
          + " about %.0f ms from its first call to its last; Redis process CPU meanwhile %.2f s%n",
          now[0] - before[0], callsPerPass, now[1] - before[1], (now[1] - before[1]) / (double) (now[0] - before[0]),
          (now[1] - before[1]) / (double) consumers, passMs, cpu);
      System.out.printf("a pass every %d s while scraped: %.2f %% of one Redis core%n", INTERVAL_MS / 1000,
          (now[1] - before[1]) / 10.0 / INTERVAL_MS);
      long shownFrom = System.nanoTime();
      int series = await().pollInterval(Duration.ofMillis(200)).atMost(Duration.ofMinutes(2))
          .until(() -> scrape(client).split("\nherald_consumer_backlog\\{").length - 1, shown -> shown >= consumers);
      System.out.printf("all %,d consumers' series shown %.1f s after the pass's last call%n", series,
          (System.nanoTime() - shownFrom) / 1e9);
      for (int i = 0; i < 3; i++) {
        long t = System.nanoTime();
        String text = scrape(client);
        System.out.printf("scrape: %,d bytes, %d consumer backlog series, %.0f ms%n", text.length(),
            text.split("\nherald_consumer_backlog\\{").length - 1, (System.nanoTime() - t) / 1e6);
      }
      watch(client, redis);
      redis.close();
    }
    System.exit(0);
  }

  /** A console's live stream open for {@link #WATCHED}: its figures events, and the FCALLs meanwhile. */
  private static void watch(BenchClient client, Redis redis) throws InterruptedException {
    List<Long> arrivals = new ArrayList<>();
    List<Integer> sizes = new ArrayList<>();
    StringBuilder pending = new StringBuilder();
    String[] everyMs = {"?"};
    long[] before = fcalls(redis);
    long from = System.nanoTime();
    client.http.request(HttpMethod.GET, "/v1/admin/live").compose(request -> request.send()).onSuccess(response ->
        response.handler(chunk -> {
          synchronized (arrivals) {
            pending.append(chunk.toString());
            for (int end; (end = pending.indexOf("\n\n")) >= 0; pending.delete(0, end + 2)) {
              String event = pending.substring(0, end);
              if (event.startsWith("event: figures")) {
                arrivals.add(System.nanoTime());
                sizes.add(event.length());
                everyMs[0] = event.replaceAll("(?s).*\"everyMs\":(\\d+).*", "$1");
              }
            }
          }
        })).await();
    Thread.sleep(WATCHED.toMillis());
    long[] after = fcalls(redis);
    double seconds = (System.nanoTime() - from) / 1e9;
    synchronized (arrivals) {
      double gap = arrivals.size() < 2 ? Double.NaN
          : (arrivals.get(arrivals.size() - 1) - arrivals.get(0)) / 1e9 / (arrivals.size() - 1);
      System.out.printf("a console watching for %.0f s: %d figures events, one every %.1f s (everyMs %s), %,d bytes"
              + " each; FCALLs meanwhile %,d, Redis %,d µs in them: %.2f %% of one Redis core%n",
          seconds, arrivals.size(), gap, everyMs[0], sizes.isEmpty() ? 0 : sizes.get(sizes.size() - 1),
          after[0] - before[0], after[1] - before[1], (after[1] - before[1]) / 1e4 / seconds);
    }
  }

  /** Runs {@code call} for 0 .. n−1, IN_FLIGHT at a time. */
  private static void each(BenchClient client, int n, IntFunction<Future<?>> call) {
    for (int from = 0; from < n; from += IN_FLIGHT) {
      List<Future<?>> calls = new ArrayList<>();
      for (int i = from; i < Math.min(n, from + IN_FLIGHT); i++) {
        int index = i;
        calls.add(call.apply(index).<Object>map(answer -> answer).timeout(10, java.util.concurrent.TimeUnit.SECONDS)
            .recover(late -> {
              RETRIED.incrementAndGet();
              System.out.println("call " + index + " unanswered after 10 s; the node's requests: "
                  + scrapeBlocking(client).lines().filter(line -> line.startsWith("vertx_http_server_active_requests")
                      || line.startsWith("vertx_http_server_requests_total") && line.contains("PUT")).toList());
              return call.apply(index).map(answer -> answer);
            }));
      }
      int first = from;
      Future.all(calls).timeout(60, java.util.concurrent.TimeUnit.SECONDS)
          .recover(failure -> Future.failedFuture(new IllegalStateException("calls " + first + ".. not answered: "
              + calls.stream().filter(pending -> !pending.isComplete()).count() + " open, failures "
              + calls.stream().filter(Future::failed).map(failed -> failed.cause().toString()).distinct().toList())))
          .await();
    }
  }

  /** A scrape from outside the client's event loop (a diagnostic made from its callbacks). */
  private static String scrapeBlocking(BenchClient client) {
    try {
      return java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + client.gateway.port() + "/metrics")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    } catch (java.io.IOException | InterruptedException e) {
      return e.toString();
    }
  }

  private static String scrape(BenchClient client) {
    return client.http.request(HttpMethod.GET, "/metrics").compose(request -> request.send())
        .compose(response -> response.body()).await().toString();
  }

  /** FCALL's {calls, µs} so far (INFO commandstats). */
  private static long[] fcalls(Redis redis) {
    String stats = redis.send(Request.cmd(Command.INFO).arg("commandstats")).await().toString();
    return stats.lines().filter(line -> line.startsWith("cmdstat_fcall:")).findFirst()
        .map(line -> new long[] {Long.parseLong(line.replaceAll(".*[:,]calls=(\\d+).*", "$1")),
            Long.parseLong(line.replaceAll(".*usec=(\\d+).*", "$1"))})
        .orElse(new long[] {0, 0});
  }
}
