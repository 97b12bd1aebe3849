package io.herald.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What both subscribers share: handler threads, settlement (acks gathered for a few milliseconds into
 * one call), lease extension of every unsettled delivery, and the stop on a refusal. The transports
 * (WebSocket, HTTP) say how deliveries arrive and how settlements are sent.
 */
abstract class AbstractSubscriber implements Subscriber, Delivery.Settlements {
  private static final long ACK_LINGER_MS = 5;
  private static final int MAX_IDS_PER_CALL = 1000;
  /** How long a delivery of an event another delivery is still being handled for waits to come again. */
  private static final Duration BUSY_DELAY = Duration.ofSeconds(1);

  protected final Gateway gateway;
  protected final String consumer;
  protected final SubscriberSettings settings;
  protected final ScheduledExecutorService timers;
  protected final Backoff backoff;
  /** Between tries of acks that no node took (Redis away): apart from the reconnects' backoff. */
  private final Backoff ackBackoff;
  private final EventHandler handler;
  private final ThreadPoolExecutor workers;
  private final CompletableFuture<Void> stopped = new CompletableFuture<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean stopping = new AtomicBoolean();
  /** Set once, under this object's lock: no more deliveries are taken. */
  protected volatile boolean closing;

  /** Every delivery received and not yet settled. */
  private final Map<Delivery, Lease> leases = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<String> acks = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean ackFlushScheduled = new AtomicBoolean();
  /** A retry of acks no node took is scheduled: apart from the linger flush, which new acks must not wait past. */
  private final AtomicBoolean ackRetryScheduled = new AtomicBoolean();
  /** One flush at a time: close() must see the calls of a flush that took acks from the queue. */
  private final Object flushing = new Object();
  /** Settlements sent and not answered yet: close() waits for them. */
  private final Set<CompletableFuture<?>> settling = ConcurrentHashMap.newKeySet();
  private volatile long ackTimeoutMs;
  private volatile int window;
  private ScheduledFuture<?> leaseTask;

  private final AtomicLong received = new AtomicLong();
  private final AtomicLong acked = new AtomicLong();
  private final AtomicLong nacked = new AtomicLong();
  private final AtomicLong extensions = new AtomicLong();
  protected final AtomicLong connections = new AtomicLong();
  protected final AtomicLong throttled = new AtomicLong();

  AbstractSubscriber(Gateway gateway, String consumer, EventHandler handler, SubscriberSettings settings,
      ScheduledExecutorService timers) {
    this.gateway = gateway;
    this.consumer = consumer;
    this.handler = handler;
    this.settings = settings;
    this.timers = timers;
    this.backoff = new Backoff(settings.initialBackoff(), settings.maxBackoff());
    this.ackBackoff = new Backoff(settings.initialBackoff(), settings.maxBackoff());
    AtomicInteger threads = new AtomicInteger();
    this.workers = new ThreadPoolExecutor(settings.parallelism(), settings.parallelism(), 0, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(), task -> {
          Thread thread = new Thread(task, "herald-" + consumer + "-handler-" + threads.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
  }

  protected String path(String tail) {
    return "/v1/consumers/" + consumer + tail;
  }

  @Override
  public Subscriber start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("already started");
    }
    CompletableFuture<JsonNode> config = new CompletableFuture<>();
    readConfig(config);
    config.whenComplete((consumerConfig, failure) -> {
      if (failure != null) {
        stop(HeraldException.of(failure));
        return;
      }
      ackTimeoutMs = settings.ackTimeout() != null ? settings.ackTimeout().toMillis()
          : consumerConfig.path("ackTimeoutMs").asLong(30_000);
      // a window over the consumer's maxUnacked would be refused
      window = (int) Math.min(settings.window(), consumerConfig.path("maxUnacked").asLong(settings.window()));
      long everyMs = Math.max(250, ackTimeoutMs / 4);
      synchronized (this) {
        if (closing) {
          return;
        }
        leaseTask = timers.scheduleAtFixedRate(this::extendLeases, everyMs, everyMs, TimeUnit.MILLISECONDS);
      }
      begin();
    });
    return this;
  }

  /** The consumer's settings (its ack timeout and maxUnacked), read again while the gateway is away. */
  private void readConfig(CompletableFuture<JsonNode> config) {
    gateway.get(path("/metadata")).whenComplete((answer, failure) -> {
      if (answer != null && answer.ok()) {
        config.complete(answer.body().path("config"));
      } else if (answer != null && answer.status() < 500) {
        config.completeExceptionally(answer.refusal());
      } else if (!closing) {
        timers.schedule(() -> readConfig(config), backoff.nextMs(), TimeUnit.MILLISECONDS);
      }
    });
  }

  /** The window in use: the setting, at most the consumer's maxUnacked. */
  protected final int window() {
    return window;
  }

  /** Starts the transport: connect, subscribe or poll. */
  protected abstract void begin();

  /**
   * Sends a settlement ({@code op} ack, nack or extend, with its body) over the transport's own
   * connection: completes with whether the gateway answered it (a 5xx or a connection that went
   * first: false), or null when there is no such connection now (the settlement goes over HTTP).
   */
  protected CompletableFuture<Boolean> settleOverConnection(String op, ObjectNode body) {
    return null;
  }

  /** Stops the transport: no more deliveries. */
  protected abstract void end();

  /** Disconnects once the last settlements went out. */
  protected abstract void disconnect();

  /** Hands a delivery to the handler threads. */
  protected final void dispatch(JsonNode event) {
    Delivery delivery = new Delivery(event, this);
    received.incrementAndGet();
    if (closing) {
      // it arrived after the subscriber stopped taking events: it comes again at once elsewhere
      delivery.nack("the subscriber closed", Duration.ZERO);
      return;
    }
    if (delivery.ackId() != null) {
      leases.put(delivery, new Lease(System.nanoTime()));
    }
    try {
      workers.execute(new Handling(delivery));
    } catch (RejectedExecutionException closed) {
      // close() shut the handler threads down meanwhile
      delivery.nack("the subscriber closed", Duration.ZERO);
    }
  }

  /** Deliveries received and not yet settled (the polling subscriber's window). */
  protected final int unsettled() {
    return leases.size();
  }

  /** Called whenever a delivery is settled (the polling subscriber polls again for the room). */
  protected void settledOne() {}

  /** Runs the handler on one delivery. */
  private final class Handling implements Runnable {
    final Delivery delivery;

    Handling(Delivery delivery) {
      this.delivery = delivery;
    }

    @Override
    public void run() {
      ProcessedEvents repeats = settings.processed();
      String eventId = delivery.eventId();
      if (repeats != null) {
        switch (repeats.claim(consumer, eventId)) {
          case DONE -> {
            delivery.ack();
            return;
          }
          case BUSY -> {
            delivery.nack("being processed on another delivery", BUSY_DELAY);
            return;
          }
          default -> { }
        }
      }
      boolean processed = false;
      try {
        handler.handle(delivery);
        if (!delivery.isSettled() && settings.beforeAck() != null) {
          settings.beforeAck().persist(delivery);
        }
        delivery.ack();
        processed = delivery.wasAcked();
      } catch (Exception | AssertionError failure) {
        delivery.nack(failure.toString());
      } finally {
        if (repeats != null) {
          repeats.release(consumer, eventId, processed);
        }
      }
    }
  }

  @Override
  public void ack(Delivery delivery) {
    acked.incrementAndGet();
    release(delivery);
    acks.add(delivery.ackId());
    if (ackFlushScheduled.compareAndSet(false, true)) {
      timers.schedule(this::flushAcks, ACK_LINGER_MS, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public void nack(Delivery delivery, String action, Duration delay, String reason) {
    nacked.incrementAndGet();
    release(delivery);
    ObjectNode nack = Json.object().put("action", action);
    nack.putArray("ackIds").add(delivery.ackId());
    if (delay != null) {
      nack.put("delayMs", delay.toMillis());
    }
    if (reason != null) {
      // the gateway keeps at most 1024 bytes of a reason
      nack.put("reason", reason.length() > 256 ? reason.substring(0, 256) : reason);
    }
    settle("nack", nack);
  }

  /**
   * Sends a settlement over the transport's connection if it has one, else over HTTP: any node takes
   * it, and a blocked consumer's settlements are never refused, so one made while the socket is away
   * (a reconnect, a 429 block) does not wait for the next. One whose connection went before its
   * answer, or that met a 5xx, goes again over HTTP. Completes with whether the gateway took it.
   */
  private CompletableFuture<Boolean> settle(String op, ObjectNode body) {
    CompletableFuture<Boolean> overConnection = settleOverConnection(op, body);
    return tracked(overConnection == null ? settleOverHttp(op, body)
        : overConnection.thenCompose(taken -> taken ? CompletableFuture.completedFuture(true) : settleOverHttp(op, body)));
  }

  private CompletableFuture<Boolean> settleOverHttp(String op, ObjectNode body) {
    String tail = switch (op) {
      case "ack" -> "/acks";
      case "nack" -> "/nacks";
      default -> "/extend";
    };
    // taken unless no node answered or it was a 5xx: a 4xx refusal leaves its events to their deadlines, as on a socket
    return gateway.post(path(tail), Json.encode(body)).handle((answer, failure) -> answer != null && answer.status() < 500);
  }

  /** Counts {@code settlement} among those {@link #close} waits for, until it is answered or fails. */
  private <T> CompletableFuture<T> tracked(CompletableFuture<T> settlement) {
    settling.add(settlement);
    settlement.whenComplete((answer, failure) -> settling.remove(settlement));
    return settlement;
  }

  private void release(Delivery delivery) {
    if (leases.remove(delivery) != null) {
      settledOne();
    }
  }

  /**
   * Sends the acks gathered (an ackId is valid on any connection and any node). Those no node took
   * (Redis away) are tried again after a backoff, until close.
   */
  protected final void flushAcks() {
    synchronized (flushing) {
      ackFlushScheduled.set(false);
      for (List<String> ids : takeAcks()) {
        ObjectNode ack = Json.object();
        ids.forEach(ack.putArray("ackIds")::add);
        settle("ack", ack).thenAccept(taken -> {
          if (taken) {
            ackBackoff.reset();
            return;
          }
          // back in the queue even while closing: close() flushes once its handlers are done
          acks.addAll(ids);
          if (!closing && ackRetryScheduled.compareAndSet(false, true)) {
            timers.schedule(() -> {
              ackRetryScheduled.set(false);
              flushAcks();
            }, ackBackoff.nextMs(), TimeUnit.MILLISECONDS);
          }
        });
      }
    }
  }

  /**
   * The acks gathered, in calls of at most {@link #MAX_IDS_PER_CALL}, all taken out before any is
   * sent: acks a send puts back must wait for the next flush.
   */
  private List<List<String>> takeAcks() {
    List<List<String>> calls = new ArrayList<>();
    for (String id; (id = acks.poll()) != null; ) {
      if (calls.isEmpty() || calls.get(calls.size() - 1).size() == MAX_IDS_PER_CALL) {
        calls.add(new ArrayList<>());
      }
      calls.get(calls.size() - 1).add(id);
    }
    return calls;
  }

  /** When a delivery arrived, and when its deadline was last pushed back. */
  private static final class Lease {
    final long receivedAt;
    long extendedAt;

    Lease(long receivedAt) {
      this.receivedAt = receivedAt;
      this.extendedAt = receivedAt;
    }
  }

  /**
   * Pushes back the deadline of every unsettled delivery (running or waiting for a thread) whose
   * deadline was last set half an ack timeout ago, unless it has been held for {@code maxLease}.
   */
  private void extendLeases() {
    long now = System.nanoTime();
    long halfNanos = TimeUnit.MILLISECONDS.toNanos(ackTimeoutMs / 2);
    List<String> due = new ArrayList<>();
    for (Map.Entry<Delivery, Lease> entry : leases.entrySet()) {
      Lease lease = entry.getValue();
      if (now - lease.extendedAt >= halfNanos && now - lease.receivedAt < settings.maxLease().toNanos()) {
        lease.extendedAt = now;
        due.add(entry.getKey().ackId());
      }
    }
    for (int from = 0; from < due.size(); from += MAX_IDS_PER_CALL) {
      ObjectNode extend = Json.object().put("extendMs", ackTimeoutMs);
      ArrayNode ids = extend.putArray("ackIds");
      due.subList(from, Math.min(due.size(), from + MAX_IDS_PER_CALL)).forEach(ids::add);
      extensions.addAndGet(ids.size());
      settle("extend", extend);
    }
  }

  /**
   * Stops for good after a refusal ({@link #stopped} tells why), settling what it holds as
   * {@link #close} does, on a thread of its own (this runs on an I/O or timer thread).
   */
  protected final void stop(HeraldException refusal) {
    if (stopping.compareAndSet(false, true)) {
      // stopped() is failed on that thread too: a callback of the caller's that closes must not hold
      // up the I/O thread the answers to the settlements come on
      Thread drain = new Thread(() -> {
        stopped.completeExceptionally(refusal);
        close();
      }, "herald-" + consumer + "-stop");
      drain.setDaemon(true);
      drain.start();
    }
  }

  @Override
  public final CompletableFuture<Void> stopped() {
    return stopped;
  }

  @Override
  public final SubscriberStats stats() {
    return new SubscriberStats(received.get(), acked.get(), nacked.get(), extensions.get(), connections.get(),
        throttled.get());
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closing) {
        return;
      }
      closing = true;
    }
    end();
    // what was received and not started comes again at once, on another subscriber
    List<Runnable> waiting = new ArrayList<>();
    workers.getQueue().drainTo(waiting);
    workers.shutdown();
    waiting.forEach(handling -> ((Handling) handling).delivery.nack("the subscriber closed", Duration.ZERO));
    try {
      workers.awaitTermination(settings.closeTimeout().toMillis(), TimeUnit.MILLISECONDS);
      flushAcks();
      awaitAnswers(settling.toArray(CompletableFuture<?>[]::new));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    shutDown();
    stopped.complete(null);
  }

  /** Waits up to closeTimeout for these calls; one that is late leaves its events to their deadlines. */
  private void awaitAnswers(CompletableFuture<?>[] calls) throws InterruptedException {
    try {
      CompletableFuture.allOf(calls).get(settings.closeTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      // all done with one failed, or time is up: what was not taken comes again after its deadline
    }
  }

  private void shutDown() {
    synchronized (this) {
      if (leaseTask != null) {
        leaseTask.cancel(false);
      }
    }
    workers.shutdownNow();
    disconnect();
  }
}
