package io.herald.bench;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.LongFunction;

/**
 * What the benchmarks share: an HTTP client of the gateway under benchmark, its publishers (as many
 * as fast as confirms allow, or paced at a rate) and the figures they print. Events carry their send
 * time ({@code payload.t}, System.nanoTime) so a consumer can tell publish-to-delivery latency.
 */
final class BenchClient {
  static final int PAYLOAD_BYTES = 256;
  static final int PUBLISHERS = 10;
  static final int EVENTS_PER_REQUEST = 100;

  final Vertx vertx = Vertx.vertx();
  final HttpClient http;
  final BenchGateway gateway;

  /** A benchmark's two phases. */
  interface Phases {
    /** Publishes and consumes {@code total} events as fast as they go; prints events/s. */
    void throughput(String label, int total);

    /** Publishes single events at {@code rate}/s for {@code seconds}; prints latency percentiles. */
    void latency(int rate, int seconds);
  }

  /**
   * Runs a benchmark's phases against a new gateway: a 50,000-event warm-up, the throughput phase of
   * {@code args[0]} events (200,000), the latency phase at {@code args[1]} events/s (5,000) for 10 s.
   */
  static void run(String[] args, Function<BenchClient, Phases> benchmark) throws Exception {
    int events = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 5_000;
    try (BenchGateway gateway = BenchGateway.start()) {
      BenchClient client = new BenchClient(gateway);
      Phases phases = benchmark.apply(client);
      phases.throughput("warm-up", Math.min(events, 50_000));
      client.slowLog(true);
      phases.throughput("throughput", events);
      phases.latency(rate, 10);
      client.slowLog(false);
    }
    System.exit(0);
  }

  BenchClient(BenchGateway gateway) {
    this.gateway = gateway;
    http = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(gateway.port())
        // enough connections that no request waits for one: the latency phase has a publish per
        // event in flight, and HTTP/1.1 carries one request at a time per connection
        .setKeepAlive(true), new PoolOptions().setHttp1MaxSize(256));
    gateway.awaitReady(vertx, http);
    System.out.printf("Java %s, %d cores, %s, AOF everysec%n", Runtime.version(),
        Runtime.getRuntime().availableProcessors(), BenchGateway.redisServer());
  }

  /**
   * Starts logging every Redis command slower than 500 µs ({@code start}), or prints the longest one
   * logged since, with its command, script keys count and duration: what one call held Redis for.
   */
  void slowLog(boolean start) {
    Redis redis = Redis.createClient(vertx, gateway.redisUrl());
    try {
      if (start) {
        redis.send(Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-log-slower-than").arg(500)).await();
        redis.send(Request.cmd(Command.CONFIG).arg("SET").arg("slowlog-max-len").arg(10_000)).await();
        redis.send(Request.cmd(Command.SLOWLOG).arg("RESET")).await();
        redis.send(Request.cmd(Command.CONFIG).arg("RESETSTAT")).await();
        return;
      }
      // what Redis ran: script calls and all commands (scripts' own included), with their CPU
      String stats = redis.send(Request.cmd(Command.INFO).arg("commandstats")).await().toString();
      StringBuilder top = new StringBuilder();
      stats.lines().filter(line -> line.startsWith("cmdstat_"))
          .map(line -> new String[] {line.substring(8, line.indexOf(':')),
              line.replaceAll(".*[:,]calls=(\\d+).*", "$1"), line.replaceAll(".*usec=(\\d+).*", "$1")})
          .sorted((a, b) -> Long.compare(Long.parseLong(b[2]), Long.parseLong(a[2])))
          .limit(12)
          .forEach(c -> top.append(String.format(" %s %s calls %s µs;", c[0], c[1], c[2])));
      System.out.println("Redis commands since the warm-up (by CPU):" + top);
      Response entries = redis.send(Request.cmd(Command.SLOWLOG).arg("GET").arg(10_000)).await();
      Response longest = null;
      for (Response entry : entries) {
        if (longest == null || entry.get(2).toLong() > longest.get(2).toLong()) {
          longest = entry;
        }
      }
      if (longest == null) {
        System.out.println("Redis: no command took 500 µs or more");
      } else {
        Response args = longest.get(3);
        String command = args.get(0).toString().toUpperCase(java.util.Locale.ROOT);
        System.out.printf("Redis: %d commands took 500 µs or more; the longest %s%s took %,d µs%n", entries.size(),
            command, command.startsWith("EVAL") && args.size() > 2 ? " (" + args.get(2) + " keys)" : "",
            longest.get(2).toLong());
      }
    } finally {
      redis.close();
    }
  }

  /** The {@code percentile}th value of {@code sorted} (nearest rank). */
  static long at(long[] sorted, int percentile) {
    return sorted[(int) Math.min(sorted.length - 1, Math.ceil(percentile / 100.0 * sorted.length) - 1)];
  }

  Future<JsonObject> call(HttpMethod method, String uri, Buffer body) {
    return http.request(method, uri)
        .compose(request -> request.send(body))
        .compose(response -> response.body().map(b -> {
          if (response.statusCode() != 200 && response.statusCode() != 201) {
            throw new IllegalStateException(uri + " -> " + response.statusCode() + " " + b);
          }
          return b.toJsonObject();
        }));
  }

  /** A consumer of {@code topic} able to take big batches and polls far beyond the default rate limit; returns its name. */
  String createConsumer(String topic) {
    return createConsumer(topic, new JsonObject());
  }

  /** As {@link #createConsumer(String)}, with {@code settings} on top. */
  String createConsumer(String topic, JsonObject settings) {
    String name = "bench-" + System.nanoTime();
    call(HttpMethod.PUT, "/v1/admin/consumers/" + name, new JsonObject()
        .put("topics", new JsonArray().add(topic)).put("maxPollRecords", 1000).put("maxUnacked", 5000)
        .put("rateLimit", new JsonObject().put("tps", 100_000))
        .mergeIn(settings).toBuffer())
        .await();
    return name;
  }

  /**
   * Publishes {@code total} events in requests of 100, {@link #PUBLISHERS} requests in flight; the
   * future completes when every publisher is done. Call on the context.
   */
  Future<Void> publishAll(String topic, int total) {
    AtomicLong claimed = new AtomicLong();
    List<Future<Void>> publishers = new ArrayList<>();
    for (int p = 0; p < PUBLISHERS; p++) {
      Promise<Void> done = Promise.promise();
      publishLoop(topic, total, claimed, done);
      publishers.add(done.future());
    }
    return Future.all(publishers).mapEmpty();
  }

  private void publishLoop(String topic, int total, AtomicLong claimed, Promise<Void> done) {
    if (claimed.addAndGet(EVENTS_PER_REQUEST) > total) {
      done.complete();
      return;
    }
    call(HttpMethod.POST, "/v1/topics/" + topic + "/events", batch(EVENTS_PER_REQUEST))
        .onSuccess(ok -> publishLoop(topic, total, claimed, done))
        .onFailure(failure -> {
          failure.printStackTrace();
          done.tryFail(failure);
        });
  }

  /**
   * Publishes the events 0 .. total−1 that {@code eventOf} makes, in requests of 100, {@link #PUBLISHERS}
   * requests in flight, each to the topic {@code topicOf} names for its first event's index; the
   * future completes when every publisher is done. Call on the context.
   */
  Future<Void> publishEach(int total, LongFunction<String> topicOf, LongFunction<JsonObject> eventOf) {
    AtomicLong claimed = new AtomicLong();
    List<Future<Void>> publishers = new ArrayList<>();
    for (int p = 0; p < PUBLISHERS; p++) {
      Promise<Void> done = Promise.promise();
      publishEachLoop(total, topicOf, eventOf, claimed, done);
      publishers.add(done.future());
    }
    return Future.all(publishers).mapEmpty();
  }

  private void publishEachLoop(int total, LongFunction<String> topicOf, LongFunction<JsonObject> eventOf,
      AtomicLong claimed, Promise<Void> done) {
    long first = claimed.getAndAdd(EVENTS_PER_REQUEST);
    if (first >= total) {
      done.complete();
      return;
    }
    JsonArray events = new JsonArray();
    for (long i = first; i < Math.min(total, first + EVENTS_PER_REQUEST); i++) {
      events.add(eventOf.apply(i));
    }
    call(HttpMethod.POST, "/v1/topics/" + topicOf.apply(first) + "/events", new JsonObject().put("events", events).toBuffer())
        .onSuccess(ok -> publishEachLoop(total, topicOf, eventOf, claimed, done))
        .onFailure(done::tryFail);
  }

  /**
   * Publishes {@code confirm.length} single events at {@code rate} per second; each publish-confirm
   * latency goes into {@code confirm}. Call on the context.
   */
  void publishAtRate(String topic, int rate, long[] confirm) {
    int total = confirm.length;
    AtomicLong sent = new AtomicLong();
    long start = System.nanoTime();
    // a 1 ms timer sends what the schedule owes, so the rate holds however timers jitter
    vertx.setPeriodic(1, timer -> {
      long due = Math.min(total, (System.nanoTime() - start) * rate / 1_000_000_000L);
      while (sent.get() < due) {
        int index = (int) sent.getAndIncrement();
        long sentAt = System.nanoTime();
        call(HttpMethod.POST, "/v1/topics/" + topic + "/events", single(sentAt))
            .onSuccess(ok -> confirm[index] = System.nanoTime() - sentAt);
      }
      if (sent.get() >= total) {
        vertx.cancelTimer(timer);
      }
    });
  }

  private static Buffer batch(int count) {
    JsonArray events = new JsonArray();
    for (int i = 0; i < count; i++) {
      events.add(event(System.nanoTime()));
    }
    return new JsonObject().put("events", events).toBuffer();
  }

  private static Buffer single(long sentAt) {
    return event(sentAt).toBuffer();
  }

  private static JsonObject event(long sentAt) {
    return new JsonObject().put("payload", new JsonObject().put("t", sentAt).put("pad", "x".repeat(PAYLOAD_BYTES - 40)));
  }

  /** Latencies recorded by the consumers of a latency phase, from any thread. */
  static final class Latencies {
    private final long[] nanos;
    private int count;

    Latencies(int capacity) {
      nanos = new long[capacity];
    }

    /** Records the delivery of an event that carries its send time. */
    synchronized void delivered(JsonObject event, long now) {
      if (count < nanos.length) {
        nanos[count++] = now - event.getJsonObject("payload").getLong("t");
      }
    }

    synchronized long[] values() {
      return Arrays.copyOf(nanos, count);
    }
  }

  static double percentile(long[] nanos, double p) {
    long[] sorted = Arrays.stream(nanos).filter(n -> n > 0).sorted().toArray();
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] / 1e6;
  }

  /** The phase's line: confirm and delivery percentiles. */
  static void printLatency(String what, int rate, int seconds, long[] confirm, Latencies delivery) {
    System.out.printf("latency    %,d events/s for %d s, %s: publish-confirm p50 %.2f ms, p99 %.2f ms; "
            + "publish-to-delivery p50 %.2f ms, p99 %.2f ms%n", rate, seconds, what,
        percentile(confirm, 50), percentile(confirm, 99),
        percentile(delivery.values(), 50), percentile(delivery.values(), 99));
  }

  /** CPU seconds each process has used so far. */
  CpuTimes cpu() {
    return new CpuTimes(BenchGateway.cpuSeconds(gateway.gatewayProcess()), gateway.redisCpuSeconds(),
        BenchGateway.cpuSeconds(ProcessHandle.current()));
  }

  record CpuTimes(double gateway, double redis, double client) {
    String since(CpuTimes before) {
      return String.format("CPU s: gateway %.1f, redis %.1f, benchmark client %.1f",
          gateway - before.gateway, redis - before.redis, client - before.client);
    }
  }
}
