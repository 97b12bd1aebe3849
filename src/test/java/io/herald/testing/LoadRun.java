package io.herald.testing;

import static org.awaitility.Awaitility.await;

import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A publisher and a consumer (acking two batches in three, nacking the third back with no delay)
 * running against gateway nodes while a test breaks something under them. It records what the
 * gateway confirmed and acked, and what it may or may not have acked (answers lost with Redis), so
 * that the test can check afterwards that nothing confirmed was lost.
 */
public final class LoadRun {
  /** eventIds whose publish was confirmed. */
  public final Set<String> confirmed = ConcurrentHashMap.newKeySet();
  /** eventIds whose ack answered ACKED. */
  public final Set<String> acked = ConcurrentHashMap.newKeySet();
  /** eventIds answered ACKED more than once: processed twice by a consumer that trusts ACKED. */
  public final Set<String> ackedAgain = ConcurrentHashMap.newKeySet();
  /** eventIds of acks that failed (503): done or not, nobody knows. */
  public final Set<String> maybeAcked = ConcurrentHashMap.newKeySet();
  /** Requests answered other than 200: "<what> <status> <body>". */
  public final List<String> failures = new CopyOnWriteArrayList<>();
  /** eventIds of every event received. */
  public final Set<String> received = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final ExecutorService workers;
  private final List<Future<?>> loops = new ArrayList<>();
  /** When the last publish was confirmed, and the longest time between two confirmed publishes. */
  private final AtomicLong lastConfirmedNanos = new AtomicLong(System.nanoTime());
  private final AtomicLong longestGapNanos = new AtomicLong();

  private LoadRun(Http publishing, String topic, Http consuming, String consumerName, int publishers) {
    workers = Executors.newFixedThreadPool(publishers + 1);
    for (int p = 0; p < publishers; p++) {
      loops.add(workers.submit(() -> going("publish", () -> publish(publishing, topic))));
    }
    loops.add(workers.submit(() -> going("consume", () -> consume(consuming, consumerName))));
  }

  /**
   * Runs a loop again when a request of it threw (a timeout, a connection reset while Redis fails
   * over), so that one such failure does not end it: the failure is recorded.
   */
  private void going(String loop, Runnable body) {
    while (running.get()) {
      try {
        body.run();
      } catch (RuntimeException e) {
        failures.add(loop + " threw " + e);
      }
    }
  }

  private void publish(Http publishing, String topic) {
    for (int i = 0; running.get(); i++) {
      Reply reply = publishing.publish(topic, new JsonObject().put("payload", i));
      failed("publish", reply);
      if (reply.status() == 200) {
        confirmed.add(reply.results().getJsonObject(0).getString("eventId"));
        long now = System.nanoTime();
        long gap = now - lastConfirmedNanos.getAndSet(now);
        longestGapNanos.accumulateAndGet(gap, Math::max);
      }
    }
  }

  private void consume(Http consuming, String consumerName) {
    for (int round = 0; running.get(); round++) {
      Reply batch = consuming.poll(consumerName, new JsonObject().put("maxEvents", 100).put("waitMs", 200));
      failed("poll", batch);
      if (batch.status() != 200 || batch.events().isEmpty()) {
        continue;
      }
      received.addAll(batch.eventIds());
      List<String> ackIds = batch.ackIds();
      if (round % 3 == 0) {
        failed("nack", consuming.post("/v1/consumers/" + consumerName + "/nacks", new JsonObject()
            .put("ackIds", new JsonArray(ackIds)).put("action", "REQUEUE").put("delayMs", 0)));
        continue;
      }
      Reply settled = consuming.ack(consumerName, ackIds.toArray(String[]::new));
      failed("ack", settled);
      if (settled.status() != 200) {
        maybeAcked.addAll(batch.eventIds());
        continue;
      }
      for (int i = 0; i < ackIds.size(); i++) {
        if ("ACKED".equals(settled.results().getJsonObject(i).getString("status"))) {
          acked.add(batch.eventIds().get(i));
        }
      }
    }
  }

  private void failed(String what, Reply reply) {
    if (reply.status() != 200) {
      failures.add(what + " " + reply.status() + " " + reply.body());
    }
  }

  /**
   * Settings for the consumer of a load run: its loop polls far more often than the default rate
   * limit allows, and what it leaves unacked comes back within seconds.
   */
  public static JsonObject consumerSettings(String topic) {
    return new JsonObject().put("topics", new JsonArray().add(topic)).put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)).put("rateLimit", new JsonObject().put("tps", 100_000));
  }

  /**
   * Starts publishing to {@code topic} through one node and consuming {@code consumer} (made with
   * {@link #consumerSettings}) through another, or the same.
   */
  public static LoadRun start(Http publishing, String topic, Http consuming, String consumer) {
    return start(publishing, topic, consuming, consumer, 1);
  }

  /** As {@link #start(Http, String, Http, String)}, with {@code publishers} publishing side by side. */
  public static LoadRun start(Http publishing, String topic, Http consuming, String consumer, int publishers) {
    return new LoadRun(publishing, topic, consuming, consumer, publishers);
  }

  /** Waits until {@code more} events more than now were acked. */
  public void awaitAcked(int more) {
    int target = acked.size() + more;
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> acked.size() >= target);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError(acked.size() + " acked, not " + target + "; the run's failures: " + failures, e);
    }
  }

  /** Waits until {@code more} publishes more than now were confirmed. */
  public void awaitConfirmed(int more) {
    int target = confirmed.size() + more;
    await().atMost(Duration.ofSeconds(60)).until(() -> confirmed.size() >= target);
  }

  /** The longest time between two confirmed publishes so far: how long publishing was interrupted. */
  public long longestGapMs() {
    return longestGapNanos.get() / 1_000_000;
  }

  /** Stops both loops, after their requests in flight. */
  public void stop() {
    running.set(false);
    try {
      for (Future<?> loop : loops) {
        loop.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("a load loop failed", e.getCause());
    } finally {
      workers.shutdown();
    }
  }

  /**
   * After {@link #stop}: polls and acks {@code consumer} until it holds nothing (backlog, unacked,
   * scheduled all 0), adding what it receives to {@link #received}.
   */
  public void drain(Http http, String consumerName) {
    await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> {
      Reply batch = http.poll(consumerName, new JsonObject().put("maxEvents", 100));
      if (batch.status() == 200 && !batch.events().isEmpty()) {
        received.addAll(batch.eventIds());
        http.ack(consumerName, batch.ackIds().toArray(String[]::new));
        return false;
      }
      JsonObject metadata = http.metadata(consumerName).json();
      return batch.status() == 200 && metadata.getLong("backlog") == 0 && metadata.getLong("unacked") == 0
          && metadata.getLong("scheduled") == 0 && metadata.getLong("delayed", 0L) == 0;
    });
  }
}
