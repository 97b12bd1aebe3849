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
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: measures publish-confirm → poll → ack through one gateway node (its own process, the
 * fat jar) on a real Redis (AOF, fsync every second) and prints events/s, latency percentiles and
 * the CPU time each process used.
 *
 * <pre>bench/run [events] [rate]</pre>
 *
 * Phase 1, throughput: {@code events} events of 256 bytes, at most 1,000 unconfirmed (10 publishers,
 * 100 events per request), consumed by long polls that ack every event by its ackId.
 * Phase 2, latency: single-event publishes at {@code rate} events/s for 10 s, one long poll at a time
 * per poller; publish-confirm and publish-to-delivery percentiles.
 */
public final class PublishPollAckBenchmark {
  private static final int PAYLOAD_BYTES = 256;
  private static final int PUBLISHERS = 10;
  private static final int EVENTS_PER_REQUEST = 100;
  private static final int POLLERS = 4;
  private static final int POLL_BATCH = 250;

  private final Vertx vertx = Vertx.vertx();
  private final HttpClient http;

  private PublishPollAckBenchmark(int port) {
    http = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1").setDefaultPort(port)
        // enough connections that no request waits for one: the latency phase has a publish per
        // event in flight, and HTTP/1.1 carries one request at a time per connection
        .setKeepAlive(true), new PoolOptions().setHttp1MaxSize(256));
  }

  public static void main(String[] args) throws Exception {
    int events = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 5_000;
    try (BenchGateway gateway = BenchGateway.start()) {
      PublishPollAckBenchmark bench = new PublishPollAckBenchmark(gateway.port());
      gateway.awaitReady(bench.vertx, bench.http);
      System.out.printf("Java %s, %d cores, %s, AOF everysec%n", Runtime.version(),
          Runtime.getRuntime().availableProcessors(), BenchGateway.redisServer());
      bench.throughput("warm-up", Math.min(events, 50_000), gateway);
      bench.throughput("throughput", events, gateway);
      bench.latency(rate, 10);
      bench.vertx.close().await();
    }
    System.exit(0);
  }

  private Future<JsonObject> call(HttpMethod method, String uri, Buffer body) {
    return http.request(method, uri)
        .compose(request -> request.send(body))
        .compose(response -> response.body().map(b -> {
          if (response.statusCode() != 200 && response.statusCode() != 201) {
            throw new IllegalStateException(uri + " -> " + response.statusCode() + " " + b);
          }
          return b.toJsonObject();
        }));
  }

  private String createConsumer(String topic) {
    String name = "bench-" + System.nanoTime();
    call(HttpMethod.PUT, "/v1/admin/consumers/" + name, new JsonObject()
        .put("topics", new JsonArray().add(topic)).put("maxPollRecords", 1000).put("maxUnacked", 5000).toBuffer())
        .await();
    return name;
  }

  private static Buffer batch(int count) {
    JsonArray events = new JsonArray();
    for (int i = 0; i < count; i++) {
      events.add(new JsonObject().put("payload", new JsonObject().put("t", System.nanoTime())
          .put("pad", "x".repeat(PAYLOAD_BYTES - 40))));
    }
    return new JsonObject().put("events", events).toBuffer();
  }

  private void throughput(String label, int total, BenchGateway gateway) {
    double heraldCpu = BenchGateway.cpuSeconds(gateway.gatewayProcess());
    double clientCpu = BenchGateway.cpuSeconds(ProcessHandle.current());
    double redisCpu = BenchGateway.cpuSeconds(gateway.redisProcess());
    String topic = "bench/" + System.nanoTime();
    String consumer = createConsumer(topic);
    AtomicLong published = new AtomicLong();
    AtomicLong acked = new AtomicLong();
    long start = System.nanoTime();
    Promise<Void> allAcked = Promise.promise();
    vertx.runOnContext(v -> {
      for (int p = 0; p < PUBLISHERS; p++) {
        publishLoop(topic, total, published);
      }
      for (int p = 0; p < POLLERS; p++) {
        pollLoop(consumer, total, acked, allAcked, null);
      }
    });
    allAcked.future().await();
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf("%-10s %,d events published, delivered and acked in %.2f s: %,.0f events/s"
            + " (CPU s: gateway %.1f, redis %.1f, benchmark client %.1f)%n", label, total, seconds, total / seconds,
        BenchGateway.cpuSeconds(gateway.gatewayProcess()) - heraldCpu, BenchGateway.cpuSeconds(gateway.redisProcess()) - redisCpu,
        BenchGateway.cpuSeconds(ProcessHandle.current()) - clientCpu);
  }

  private void publishLoop(String topic, int total, AtomicLong published) {
    long claimed = published.addAndGet(EVENTS_PER_REQUEST);
    if (claimed > total) {
      return;
    }
    call(HttpMethod.POST, "/v1/topics/" + topic + "/events", batch(EVENTS_PER_REQUEST))
        .onSuccess(ok -> publishLoop(topic, total, published))
        .onFailure(Throwable::printStackTrace);
  }

  /** Polls, acks every event by its ackId, polls again; {@code deliveryNanos} collects latencies. */
  private void pollLoop(String consumer, int total, AtomicLong acked, Promise<Void> done, long[][] latency) {
    if (acked.get() >= total) {
      done.tryComplete();
      return;
    }
    call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll",
        new JsonObject().put("maxEvents", POLL_BATCH).put("waitMs", 1000).toBuffer())
        .compose(batch -> {
          JsonArray events = batch.getJsonArray("events");
          if (events.isEmpty()) {
            return Future.succeededFuture();
          }
          long now = System.nanoTime();
          JsonArray ackIds = new JsonArray();
          for (Object item : events) {
            JsonObject event = (JsonObject) item;
            ackIds.add(event.getString("ackId"));
            if (latency != null) {
              synchronized (latency) {
                int at = (int) latency[1][0]++;
                if (at < latency[0].length) {
                  latency[0][at] = now - event.getJsonObject("payload").getLong("t");
                }
              }
            }
          }
          return call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks",
              new JsonObject().put("ackIds", ackIds).toBuffer())
              .map(reply -> acked.addAndGet(ackIds.size()));
        })
        .onSuccess(ok -> pollLoop(consumer, total, acked, done, latency))
        .onFailure(failure -> {
          // pollers still parked when a phase ends are cut off with the gateway: not an error
          if (done.tryFail(failure)) {
            failure.printStackTrace();
          }
        });
  }

  private void latency(int rate, int seconds) {
    String topic = "latency/" + System.nanoTime();
    String consumer = createConsumer(topic);
    int total = rate * seconds;
    long[] confirm = new long[total];
    long[][] delivery = {new long[total], new long[1]};
    AtomicLong acked = new AtomicLong();
    AtomicLong sent = new AtomicLong();
    Promise<Void> allAcked = Promise.promise();
    long start = System.nanoTime();
    vertx.runOnContext(v -> {
      for (int p = 0; p < POLLERS; p++) {
        pollLoop(consumer, total, acked, allAcked, delivery);
      }
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
    });
    allAcked.future().await();
    System.out.printf("latency    %,d events/s for %d s: publish-confirm p50 %.2f ms, p99 %.2f ms; "
            + "publish-to-delivery p50 %.2f ms, p99 %.2f ms%n", rate, seconds,
        percentile(confirm, 50), percentile(confirm, 99),
        percentile(Arrays.copyOf(delivery[0], (int) Math.min(total, delivery[1][0])), 50),
        percentile(Arrays.copyOf(delivery[0], (int) Math.min(total, delivery[1][0])), 99));
  }

  private static Buffer single(long sentAt) {
    return new JsonObject().put("payload", new JsonObject().put("t", sentAt)
        .put("pad", "x".repeat(PAYLOAD_BYTES - 40))).toBuffer();
  }

  private static double percentile(long[] nanos, double p) {
    long[] sorted = Arrays.stream(nanos).filter(n -> n > 0).sorted().toArray();
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] / 1e6;
  }
}
