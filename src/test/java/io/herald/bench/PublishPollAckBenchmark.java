package io.herald.bench;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
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
public final class PublishPollAckBenchmark implements BenchClient.Phases {
  private static final int POLLERS = 4;
  private static final int POLL_BATCH = 250;

  private final BenchClient client;

  private PublishPollAckBenchmark(BenchClient client) {
    this.client = client;
  }

  public static void main(String[] args) throws Exception {
    BenchClient.run(args, PublishPollAckBenchmark::new);
  }

  @Override
  public void throughput(String label, int total) {
    BenchClient.CpuTimes before = client.cpu();
    String topic = "bench/" + System.nanoTime();
    String consumer = client.createConsumer(topic);
    AtomicLong acked = new AtomicLong();
    long start = System.nanoTime();
    Promise<Void> allAcked = Promise.promise();
    client.vertx.runOnContext(v -> {
      client.publishAll(topic, total);
      for (int p = 0; p < POLLERS; p++) {
        pollLoop(consumer, total, acked, allAcked, null);
      }
    });
    allAcked.future().await();
    double seconds = (System.nanoTime() - start) / 1e9;
    System.out.printf("%-10s %,d events published, delivered and acked in %.2f s: %,.0f events/s (%s)%n",
        label, total, seconds, total / seconds, client.cpu().since(before));
  }

  /** Polls, acks every event by its ackId, polls again; {@code latency} (if any) records deliveries. */
  private void pollLoop(String consumer, int total, AtomicLong acked, Promise<Void> done, BenchClient.Latencies latency) {
    if (acked.get() >= total) {
      done.tryComplete();
      return;
    }
    client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/poll",
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
              latency.delivered(event, now);
            }
          }
          return client.call(HttpMethod.POST, "/v1/consumers/" + consumer + "/acks",
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

  @Override
  public void latency(int rate, int seconds) {
    String topic = "latency/" + System.nanoTime();
    String consumer = client.createConsumer(topic);
    int total = rate * seconds;
    long[] confirm = new long[total];
    BenchClient.Latencies delivery = new BenchClient.Latencies(total);
    AtomicLong acked = new AtomicLong();
    Promise<Void> allAcked = Promise.promise();
    client.vertx.runOnContext(v -> {
      for (int p = 0; p < POLLERS; p++) {
        pollLoop(consumer, total, acked, allAcked, delivery);
      }
      client.publishAtRate(topic, rate, confirm);
    });
    allAcked.future().await();
    BenchClient.printLatency(POLLERS + " HTTP long pollers", rate, seconds, confirm, delivery);
  }
}
