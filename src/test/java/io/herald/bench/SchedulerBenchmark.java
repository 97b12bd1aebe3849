package io.herald.bench;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: the redelivery scheduler's lateness with many pending deliveries, on one gateway
 * process (the fat jar) and a real Redis (AOF, fsync every second).
 *
 * <pre>bench/scheduler [pending=1000000] [duePerSecond=10000]</pre>
 *
 * Spreads {@code pending} events over 10 consumers (maxUnacked is at most 100,000 each), hands them
 * out without acking at {@code duePerSecond} (polls every 10 ms), with a 120 s ack timeout and no
 * backoff, so that {@code pending} deliveries are pending when the first deadlines pass and then
 * {@code duePerSecond} of them fall due each second. Long polls (two per consumer) take the
 * redeliveries and ack them; lateness is the time from a delivery's deadline to its next hand-out,
 * both by Redis' clock.
 */
public final class SchedulerBenchmark {
  private static final int CONSUMERS = 10;
  private static final long ACK_TIMEOUT_MS = 120_000;

  public static void main(String[] args) throws Exception {
    int pending = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int perSecond = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
    try (BenchGateway gateway = BenchGateway.start()) {
      BenchClient client = new BenchClient(gateway);
      List<String> consumers = new ArrayList<>();
      List<String> topics = new ArrayList<>();
      for (int c = 0; c < CONSUMERS; c++) {
        String topic = "late/" + c;
        topics.add(topic);
        consumers.add(client.createConsumer(topic, new JsonObject().put("ackTimeoutMs", ACK_TIMEOUT_MS)
            .put("maxUnacked", 100_000).put("redelivery", new JsonObject().put("initialDelayMs", 0))));
      }
      long loadStart = System.nanoTime();
      for (String topic : topics) {
        Promise<Void> published = Promise.promise();
        client.vertx.runOnContext(v -> client.publishAll(topic, pending / CONSUMERS).onComplete(published));
        published.future().await();
      }
      System.out.printf("published %,d events in %.1f s%n", pending, (System.nanoTime() - loadStart) / 1e9);

      Map<String, Long> firstDeadline = new ConcurrentHashMap<>();
      long handOutStart = System.nanoTime();
      handOut(client, consumers, pending, perSecond, firstDeadline);
      double seconds = (System.nanoTime() - handOutStart) / 1e9;
      System.out.printf("handed out %,d in %.1f s (%,.0f/s, so as many fall due per second); all pending when the"
          + " first deadline passes%n", firstDeadline.size(), seconds, firstDeadline.size() / seconds);

      long[] lateness = new long[pending];
      AtomicLong measured = new AtomicLong();
      Promise<Void> done = Promise.promise();
      client.vertx.runOnContext(v -> consumers.forEach(consumer -> {
        for (int p = 0; p < 2; p++) {
          redeliveries(client, consumer, firstDeadline, lateness, measured, pending, done);
        }
      }));
      done.future().await();
      long[] sorted = Arrays.stream(lateness, 0, (int) Math.min(pending, measured.get())).sorted().toArray();
      System.out.printf("lateness   %,d redeliveries: deadline to next hand-out p50 %d ms, p99 %d ms, max %d ms%n",
          sorted.length, BenchClient.at(sorted, 50), BenchClient.at(sorted, 99), sorted[sorted.length - 1]);
    }
    System.exit(0);
  }

  /** Polls every 10 ms, round-robin, so that deliveries are handed out (and later fall due) at {@code perSecond}. */
  private static void handOut(BenchClient client, List<String> consumers, int total, int perSecond,
      Map<String, Long> firstDeadline) {
    Promise<Void> done = Promise.promise();
    int perTick = Math.max(1, perSecond / 100 / consumers.size());
    AtomicLong inFlight = new AtomicLong();
    client.vertx.setPeriodic(10, timer -> {
      if (firstDeadline.size() >= total) {
        client.vertx.cancelTimer(timer);
        done.tryComplete();
        return;
      }
      if (inFlight.get() > 4 * consumers.size()) {
        return; // the gateway falls behind: do not pile up requests
      }
      for (String consumer : consumers) {
        inFlight.incrementAndGet();
        client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll", new JsonObject().put("maxEvents", perTick).toBuffer())
            .onComplete(reply -> {
              inFlight.decrementAndGet();
              if (reply.succeeded()) {
                for (Object item : reply.result().getJsonArray("events")) {
                  JsonObject event = (JsonObject) item;
                  firstDeadline.put(event.getString("eventId"), event.getLong("ackDeadline"));
                }
              }
            });
      }
    });
    done.future().await();
  }

  /** Long-polls redeliveries, records each one's lateness, acks them by batch. */
  private static void redeliveries(BenchClient client, String consumer, Map<String, Long> firstDeadline, long[] lateness,
      AtomicLong measured, int total, Promise<Void> done) {
    if (measured.get() >= total) {
      done.tryComplete();
      return;
    }
    client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll",
            new JsonObject().put("maxEvents", 1000).put("waitMs", 1000).toBuffer())
        .compose(batch -> {
          JsonArray events = batch.getJsonArray("events");
          for (Object item : events) {
            JsonObject event = (JsonObject) item;
            Long deadline = firstDeadline.get(event.getString("eventId"));
            if (deadline != null && event.getInteger("deliveryCount") == 2) {
              long handedOutAt = event.getLong("ackDeadline") - ACK_TIMEOUT_MS;
              int at = (int) measured.getAndIncrement();
              if (at < lateness.length) {
                lateness[at] = handedOutAt - deadline;
              }
            }
          }
          return events.isEmpty() ? Future.succeededFuture()
              : client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks",
                  new JsonObject().put("batchAckIds", new JsonArray().add(batch.getString("batchAckId"))).toBuffer());
        })
        .onComplete(ignored -> redeliveries(client, consumer, firstDeadline, lateness, measured, total, done));
  }
}
