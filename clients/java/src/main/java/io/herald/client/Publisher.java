package io.herald.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Publishes events in batches, one request per batch of a topic, and completes each event's future
 * when the gateway confirmed it (stored for every matching consumer) or refused it.
 *
 * <p>A topic's batches are sent one after the other, so its events are stored in the order
 * {@link #publish} was called (their eventIds sort that way, and consumers with {@code ordering: key}
 * get each key's events in that order); different topics' batches go out concurrently. While a batch
 * is in flight the next one fills up; it is sent when full ({@code maxBatchEvents} or
 * {@code maxBatchBytes}), when its linger time has passed, or as soon as the topic is idle again.
 *
 * <p>At most {@code maxInFlight} events wait for their answer: {@link #publish} blocks its caller beyond
 * that. A batch that fails for a transient reason (Redis or the node away, {@code OUTCOME_UNKNOWN}, a
 * lost connection, a timeout) is sent again, to the next node, with the same idempotencyKeys, so each
 * event is stored once; a refusal ({@code QUOTA_EXCEEDED}, ...) fails its event.
 */
public final class Publisher implements AutoCloseable {
  /** Room for the body's own {@code {"events":[]}} around the events. */
  private static final int ENVELOPE_BYTES = 16;
  /** The status each per-event refusal has as a whole-request one (protocol.md's table). */
  private static final Map<String, Integer> STATUS_OF_REFUSAL = Map.of("MESSAGE_TOO_LARGE", 413, "QUOTA_EXCEEDED", 507,
      "CONSUMER_DISABLED", 409);

  private final Gateway gateway;
  private final PublisherSettings settings;
  private final ScheduledExecutorService timers;
  private final Semaphore window;
  private final Map<String, Topic> topics = new HashMap<>();
  private final List<CompletableFuture<?>> unfinished = new ArrayList<>();
  private boolean closed;

  Publisher(Gateway gateway, PublisherSettings settings, ScheduledExecutorService timers) {
    this.gateway = gateway;
    this.settings = settings;
    this.timers = timers;
    this.window = new Semaphore(settings.maxInFlight());
  }

  /** One event waiting for its answer. */
  private final class Pending {
    final String json;
    final CompletableFuture<PublishResult> result = new CompletableFuture<>();
    private final AtomicBoolean answered = new AtomicBoolean();

    Pending(String json) {
      this.json = json;
    }

    // room is made before the caller's callbacks run: one that publishes again must not wait for itself
    void confirm(PublishResult confirmed) {
      if (answered.compareAndSet(false, true)) {
        window.release();
        result.complete(confirmed);
      }
    }

    void fail(HeraldException refusal) {
      if (answered.compareAndSet(false, true)) {
        window.release();
        result.completeExceptionally(refusal);
      }
    }
  }

  /** Events gathered for one request. */
  private final class Batch {
    final List<Pending> events = new ArrayList<>();
    int bytes = ENVELOPE_BYTES;

    boolean fits(String json) {
      return events.size() < settings.maxBatchEvents() && bytes + json.length() + 1 <= settings.maxBatchBytes();
    }

    void add(Pending pending) {
      events.add(pending);
      bytes += pending.json.length() + 1;
    }
  }

  /** A topic's batches: the one filling up, those full and waiting, and whether one is in flight. */
  private final class Topic {
    final String name;
    final Deque<Batch> full = new ArrayDeque<>();
    Batch filling;
    ScheduledFuture<?> linger;
    boolean sending;

    Topic(String name) {
      this.name = name;
    }

    /** The next batch to send, if none is in flight; null otherwise. Marks it in flight. */
    Batch next() {
      if (sending) {
        return null;
      }
      Batch batch = full.poll();
      if (batch == null && filling != null) {
        batch = filling;
        filling = null;
        if (linger != null) {
          linger.cancel(false);
        }
      }
      sending = batch != null;
      return batch;
    }
  }

  /**
   * Publishes an event on {@code topic}; the future completes with its {@link PublishResult} once the
   * gateway stored it, or fails with a {@link HeraldException} saying why not. Blocks while
   * {@code maxInFlight} events are unanswered.
   *
   * @throws IllegalStateException when the publisher is closed
   * @throws InterruptedException  when interrupted while waiting for room
   */
  public CompletableFuture<PublishResult> publish(String topicName, Event event) throws InterruptedException {
    Pending pending = new Pending(event.toJson());
    window.acquire();
    Batch toSend;
    Topic topic;
    synchronized (this) {
      if (closed) {
        window.release();
        throw new IllegalStateException("the publisher is closed");
      }
      topic = topics.computeIfAbsent(topicName, Topic::new);
      if (topic.filling != null && !topic.filling.fits(pending.json)) {
        topic.full.add(topic.filling);
        topic.filling = null;
      }
      if (topic.filling == null) {
        topic.filling = new Batch();
        Batch lingering = topic.filling;
        topic.linger = timers.schedule(() -> lingered(topic, lingering), settings.linger().toNanos(), TimeUnit.NANOSECONDS);
      }
      topic.filling.add(pending);
      if (topic.filling.events.size() >= settings.maxBatchEvents()) {
        topic.full.add(topic.filling);
        topic.filling = null;
        topic.linger.cancel(false);
      }
      if (unfinished.size() > 2 * settings.maxInFlight()) {
        unfinished.removeIf(CompletableFuture::isDone);
      }
      unfinished.add(pending.result);
      toSend = topic.full.isEmpty() ? null : topic.next();
    }
    send(topic, toSend);
    return pending.result;
  }

  /** Sends every batch now (each topic's in order); completes when every event published so far has its answer. */
  public CompletableFuture<Void> flush() {
    CompletableFuture<?>[] waiting;
    List<Topic> idle = new ArrayList<>();
    List<Batch> batches = new ArrayList<>();
    synchronized (this) {
      for (Topic topic : topics.values()) {
        if (topic.filling != null) {
          topic.full.add(topic.filling);
          topic.filling = null;
          topic.linger.cancel(false);
        }
        Batch batch = topic.next();
        if (batch != null) {
          idle.add(topic);
          batches.add(batch);
        }
      }
      unfinished.removeIf(CompletableFuture::isDone);
      waiting = unfinished.toArray(CompletableFuture<?>[]::new);
    }
    for (int i = 0; i < idle.size(); i++) {
      send(idle.get(i), batches.get(i));
    }
    return CompletableFuture.allOf(waiting).handle((done, failure) -> null);
  }

  /** Refuses new events, sends the open batches and waits for every answer (their retries included). */
  @Override
  public void close() {
    synchronized (this) {
      closed = true;
    }
    flush().join();
  }

  private void lingered(Topic topic, Batch batch) {
    Batch toSend;
    synchronized (this) {
      if (topic.filling != batch) {
        return;
      }
      topic.full.add(batch);
      topic.filling = null;
      toSend = topic.next();
    }
    send(topic, toSend);
  }

  /** After a batch's answer: the topic's next batch, if any. */
  private void sent(Topic topic) {
    Batch toSend;
    synchronized (this) {
      topic.sending = false;
      toSend = topic.next();
    }
    send(topic, toSend);
  }

  private void send(Topic topic, Batch batch) {
    if (batch == null) {
      return;
    }
    StringBuilder body = new StringBuilder(batch.bytes).append("{\"events\":[");
    for (int i = 0; i < batch.events.size(); i++) {
      body.append(i == 0 ? "" : ",").append(batch.events.get(i).json);
    }
    String json = body.append("]}").toString();
    attempt(topic, batch, json, System.nanoTime() + settings.retryTimeout().toNanos(),
        new Backoff(settings.initialBackoff(), settings.maxBackoff()));
  }

  private void attempt(Topic topic, Batch batch, String body, long retryUntil, Backoff backoff) {
    gateway.post("/v1/topics/" + topic.name + "/events", body).whenComplete((answer, failure) -> {
      HeraldException problem;
      if (failure != null) {
        problem = HeraldException.of(failure);
      } else if (answer.ok()) {
        // the topic's next batch goes before this one's callers hear back (their callbacks may take long)
        sent(topic);
        settle(batch, answer.body().path("results"));
        return;
      } else {
        problem = answer.refusal();
      }
      long waitMs = backoff.nextMs();
      if (problem.isTransient() && System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs) < retryUntil) {
        // the same body, the same idempotencyKeys: whatever the last try stored is stored once
        timers.schedule(() -> attempt(topic, batch, body, retryUntil, backoff), waitMs, TimeUnit.MILLISECONDS);
      } else {
        sent(topic);
        batch.events.forEach(pending -> pending.fail(problem));
      }
    });
  }

  private static void settle(Batch batch, JsonNode results) {
    for (JsonNode result : results) {
      int index = result.path("index").asInt(-1);
      if (index < 0 || index >= batch.events.size()) {
        continue;
      }
      Pending pending = batch.events.get(index);
      if ("CONFIRMED".equals(result.path("status").asText())) {
        pending.confirm(new PublishResult(result.path("eventId").asText(), result.path("matched").asInt(),
            result.path("duplicate").asBoolean(false), result.path("correlationId").textValue()));
      } else {
        String code = result.path("code").asText();
        pending.fail(new HeraldException(STATUS_OF_REFUSAL.getOrDefault(code, 400), code, result.path("message").asText(),
            result.get("details")));
      }
    }
    // an answer without a row for an event (never expected) must not leave its caller waiting
    batch.events.forEach(pending -> pending.fail(
        new HeraldException(500, "NO_RESULT", "the gateway's answer had no result for this event", null)));
  }
}
