package io.herald.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import java.net.http.WebSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench}: a publish→consume→ack load against a running gateway, through a topic and a consumer
 * of its own (deleted at the end). Publishers send batches over HTTP; one WebSocket subscribed in push
 * mode takes the events and acks each batch. A progress line every second, then a result table:
 * throughput, and confirm and delivery latency percentiles.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
    description = {"Runs a publish -> consume -> ack load through a topic and a consumer of its own (deleted at the end; "
        + "an admin grant where credentials are configured). Prints progress every second to standard error, then a result "
        + "table: events/s published and delivered, p50/p99/max of the publish confirm (a request's round trip) and of "
        + "the delivery (from sending the publish to the event's arrival on the socket).",
        "With --rate the publishers keep to that pace and latencies count from each request's planned time, so a "
            + "stalled gateway shows in them (no coordinated omission)."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:every event confirmed, delivered and acked", "1:refused, or not every event came back in --timeout",
        "2:wrong command line", "3:the gateway unreachable or unavailable"})
final class BenchCommand implements Callable<Integer> {
  @Mixin
  GatewayOptions gateway;

  @Option(names = {"-n", "--events"}, paramLabel = "N", defaultValue = "20000", description = "events to publish (default ${DEFAULT-VALUE})")
  long events;

  @Option(names = "--size", paramLabel = "BYTES", defaultValue = "256", description = "payload size, 16..1048576 (default ${DEFAULT-VALUE})")
  int size;

  @Option(names = "--batch", paramLabel = "N", defaultValue = "50", description = "events per publish request, 1..1000 (default ${DEFAULT-VALUE})")
  int batch;

  @Option(names = "--publishers", paramLabel = "N", defaultValue = "4", description = "concurrent publishing connections, 1..256 (default ${DEFAULT-VALUE})")
  int publishers;

  @Option(names = "--window", paramLabel = "N", defaultValue = "1000", description = "the subscriber's window of unacked events, 1..100000 (default ${DEFAULT-VALUE})")
  int window;

  @Option(names = "--rate", paramLabel = "EVENTS/S", defaultValue = "0", description = "publish at this pace (0: as fast as the gateway confirms)")
  long rate;

  @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "300", description = "give up after this long (default ${DEFAULT-VALUE})")
  long timeoutSeconds;

  @Option(names = "--json", description = "the result as one JSON object instead of a table")
  boolean json;

  @Spec
  CommandSpec spec;

  private final AtomicLong next = new AtomicLong();
  private final AtomicLong confirmed = new AtomicLong();
  /** When the last event was confirmed (nanoseconds from the start). */
  private final AtomicLong publishedAt = new AtomicLong();
  private final Latencies confirms = new Latencies();
  private final AtomicReference<String> failure = new AtomicReference<>();
  private volatile boolean unavailable;

  @Override
  public Integer call() throws Exception {
    Options.atLeast(spec, "--events", events, 1);
    Options.within(spec, "--size", size, 16, 1 << 20);
    Options.within(spec, "--batch", batch, 1, 1000);
    Options.within(spec, "--publishers", publishers, 1, 256);
    Options.within(spec, "--window", window, 1, 100_000);
    Options.atLeast(spec, "--rate", rate, 0);
    Options.atLeast(spec, "--timeout", timeoutSeconds, 1);
    PrintWriter err = spec.commandLine().getErr();
    String run = RunId.next();
    String topic = "bench/" + run;
    String consumer = "bench-" + run;
    GatewayClient client = gateway.client();
    JsonObject settings = new JsonObject().put("topics", new JsonArray().add(topic)).put("maxUnacked", Math.max(window, 500))
        .put("maxPollRecords", Math.min(window, 1000)).put("ackTimeoutMs", 120_000).put("retentionMs", 3_600_000);
    try {
      GatewayClient.Answer created = client.put("/v1/admin/consumers/" + consumer, settings);
      if (!created.ok()) {
        err.println("bench refused (" + created.errorCode() + "): " + created.errorMessage());
        return ExitCodes.REFUSED;
      }
    } catch (GatewayClient.Unreachable e) {
      err.println("the gateway does not answer: " + e.getMessage());
      return ExitCodes.UNAVAILABLE;
    }
    try {
      return measure(client, topic, consumer, run, err);
    } finally {
      try {
        client.delete("/v1/admin/consumers/" + consumer);
      } catch (GatewayClient.Unreachable e) {
        err.println("could not delete " + consumer + " (its events expire within an hour): " + e.getMessage());
      }
    }
  }

  private int measure(GatewayClient client, String topic, String consumer, String run, PrintWriter err) throws Exception {
    long origin = System.nanoTime();
    BenchSubscriber subscriber = new BenchSubscriber(origin);
    WebSocket socket = client.webSocket("/v1/consumers/" + consumer + "/ws", subscriber).get(10, TimeUnit.SECONDS);
    subscriber.subscribe(socket, window);
    String padding = "x".repeat(Math.max(0, size - 16));
    long deadline = origin + TimeUnit.SECONDS.toNanos(timeoutSeconds);
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < publishers; i++) {
      Thread thread = new Thread(() -> publish(client, topic, run, padding, origin, deadline), "bench-publisher-" + i);
      thread.setDaemon(true);
      thread.start();
      threads.add(thread);
    }
    Progress progress = new Progress(err, origin);
    while (System.nanoTime() < deadline && failure.get() == null && subscriber.ended.get() == null
        && subscriber.acked.get() < events) {
      Thread.sleep(20);
      progress.maybeShow(confirmed.get(), subscriber.delivered.get(), subscriber.acked.get());
    }
    long finished = System.nanoTime() - origin;
    String problem = failure.get() != null ? failure.get() : subscriber.ended.get();
    if (problem == null && subscriber.acked.get() < events) {
      problem = "timed out after " + timeoutSeconds + " s";
    }
    progress.end();
    socket.sendClose(WebSocket.NORMAL_CLOSURE, "bench done");
    for (Thread thread : threads) {
      thread.join(TimeUnit.SECONDS.toMillis(5));
    }
    long published = publishedAt.get();
    report(spec.commandLine().getOut(), subscriber, published == 0 ? finished : published, finished);
    if (problem != null) {
      err.println("bench incomplete: " + problem);
      return unavailable ? ExitCodes.UNAVAILABLE : ExitCodes.REFUSED;
    }
    return ExitCodes.OK;
  }

  /** One publisher: takes the next batch of event numbers until all are taken. */
  private void publish(GatewayClient client, String topic, String run, String padding, long origin, long deadline) {
    String path = "/v1/topics/" + topic + "/events";
    while (failure.get() == null) {
      long first = next.getAndAdd(batch);
      if (first >= events) {
        return;
      }
      int count = (int) Math.min(batch, events - first);
      try {
        long planned = rate == 0 ? System.nanoTime() - origin : first * 1_000_000_000L / rate;
        long wait = planned - (System.nanoTime() - origin);
        if (wait > 0) {
          TimeUnit.NANOSECONDS.sleep(wait);
        }
        long sent = System.nanoTime() - origin;
        long from = rate == 0 ? sent : planned;
        JsonArray batchEvents = new JsonArray();
        for (int i = 0; i < count; i++) {
          batchEvents.add(new JsonObject().put("payload", new JsonObject().put("t", from).put("p", padding))
              .put("idempotencyKey", "bench-" + run + "-" + (first + i)));
        }
        GatewayClient.Answer answer = publishOnce(client, path, new JsonObject().put("events", batchEvents), deadline);
        if (answer == null) {
          return;
        }
        confirms.add(System.nanoTime() - origin - from);
        for (Object r : answer.body().getJsonArray("results")) {
          if (!"CONFIRMED".equals(((JsonObject) r).getString("status"))) {
            failure.compareAndSet(null, "an event was refused: " + ((JsonObject) r).encode());
            return;
          }
        }
        if (confirmed.addAndGet(count) == events) {
          publishedAt.set(System.nanoTime() - origin);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The batch's answer, sent again (same idempotencyKeys) after a 503 or a lost connection; null after a failure. */
  private GatewayClient.Answer publishOnce(GatewayClient client, String path, JsonObject body, long deadline) throws InterruptedException {
    while (true) {
      String problem;
      try {
        GatewayClient.Answer answer = client.post(path, body);
        if (answer.ok()) {
          return answer;
        }
        if (answer.status() != 503) {
          failure.compareAndSet(null, "publish refused (" + answer.errorCode() + "): " + answer.errorMessage());
          return null;
        }
        problem = answer.errorCode() + ": " + answer.errorMessage();
      } catch (GatewayClient.Unreachable e) {
        problem = e.getMessage();
      }
      if (System.nanoTime() > deadline) {
        unavailable = true;
        failure.compareAndSet(null, "publish failed: " + problem);
        return null;
      }
      Thread.sleep(500);
    }
  }

  private void report(PrintWriter out, BenchSubscriber subscriber, long publishedNanos, long finishedNanos) {
    double publishRate = confirmed.get() / (publishedNanos / 1e9);
    double deliverRate = subscriber.delivered.get() / (finishedNanos / 1e9);
    if (json) {
      out.println(new JsonObject().put("events", events).put("size", size).put("batch", batch).put("publishers", publishers)
          .put("window", window).put("rate", rate).put("confirmed", confirmed.get()).put("delivered", subscriber.delivered.get())
          .put("redelivered", subscriber.redelivered.get()).put("acked", subscriber.acked.get())
          .put("publishSeconds", publishedNanos / 1e9).put("seconds", finishedNanos / 1e9)
          .put("publishedPerSecond", publishRate).put("deliveredPerSecond", deliverRate)
          .put("confirmMs", percentiles(confirms)).put("deliveryMs", percentiles(subscriber.latencies)).encode());
    } else {
      out.printf("%,d events of %,d bytes, %d publishers, batches of %d, window %d%s%n", events, size, publishers, batch, window,
          rate == 0 ? "" : String.format(", at %,d/s", rate));
      out.printf("%-10s %,10d in %7.2f s  %,10.0f events/s%n", "published", confirmed.get(), publishedNanos / 1e9, publishRate);
      out.printf("%-10s %,10d in %7.2f s  %,10.0f events/s  (acked %,d, redelivered %,d)%n", "delivered",
          subscriber.delivered.get(), finishedNanos / 1e9, deliverRate, subscriber.acked.get(), subscriber.redelivered.get());
      out.printf("%-10s %10s %10s %10s %10s%n", "latency", "p50 ms", "p99 ms", "max ms", "samples");
      row(out, "confirm", confirms);
      row(out, "delivery", subscriber.latencies);
    }
    out.flush();
  }

  private static JsonObject percentiles(Latencies latencies) {
    return new JsonObject().put("p50", latencies.millis(50)).put("p99", latencies.millis(99)).put("max", latencies.millis(100))
        .put("samples", latencies.size());
  }

  private static void row(PrintWriter out, String name, Latencies latencies) {
    out.printf("%-10s %10.2f %10.2f %10.2f %,10d%n", name, latencies.millis(50), latencies.millis(99), latencies.millis(100),
        latencies.size());
  }

  /** The progress line, redrawn every second on standard error. */
  private final class Progress {
    private final PrintWriter err;
    private final long origin;
    private long shownAt;
    private long lastConfirmed;
    private long lastDelivered;

    Progress(PrintWriter err, long origin) {
      this.err = err;
      this.origin = origin;
      this.shownAt = origin;
    }

    void maybeShow(long confirmedNow, long deliveredNow, long ackedNow) {
      long now = System.nanoTime();
      if (now - shownAt < 1_000_000_000L) {
        return;
      }
      double seconds = (now - shownAt) / 1e9;
      err.printf("\r%5.0f s  published %,d/%,d (%,.0f/s)  delivered %,d (%,.0f/s)  acked %,d   ", (now - origin) / 1e9,
          confirmedNow, events, (confirmedNow - lastConfirmed) / seconds, deliveredNow, (deliveredNow - lastDelivered) / seconds,
          ackedNow);
      err.flush();
      shownAt = now;
      lastConfirmed = confirmedNow;
      lastDelivered = deliveredNow;
    }

    void end() {
      if (shownAt != origin) {
        err.println();
        err.flush();
      }
    }
  }
}
