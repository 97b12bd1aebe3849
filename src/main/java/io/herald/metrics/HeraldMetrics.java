package io.herald.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.Label;
import io.vertx.micrometer.MicrometerMetricsFactory;
import io.vertx.micrometer.MicrometerMetricsOptions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A node's meters, in one Prometheus registry with Vert.x's own (HTTP, WebSocket, event bus, pools)
 * when the node's Vert.x was built by {@link #vertx}. Labels take bounded values only: a result or
 * error code, a transport, a script, a reason, a consumer name; never an eventId, a path or a key.
 *
 * <p>What this node did is counted here as it happens (publishes, deliveries, acks, script calls).
 * What Redis holds for every node alike (each consumer's backlog, unacked and dead letters; the
 * gateway's dead letters by reason and throttle blocks) is read by {@link ConsumerGauges} in one pass
 * per interval, and every node reports the same figures: aggregate those with {@code max}, not {@code sum}.
 */
public final class HeraldMetrics {
  /** Publish to confirmation: a Redis round trip or a few, up to the Redis timeout. */
  private static final Duration[] CONFIRM_BUCKETS = millis(0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000);
  /** Publish to first hand-out: ms when consumers keep up, hours when a backlog waits (or a delay). */
  private static final Duration[] LAG_BUCKETS = millis(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000,
      30_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000);
  /** A script's call, as this node waits for it (Redis' work, the network and the pipeline ahead of it). */
  private static final Duration[] SCRIPT_BUCKETS = millis(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000, 5000);
  /** An HTTP response, in ns (Micrometer's unit for timers' buckets): up to a long poll's wait. */
  private static final double[] RESPONSE_BUCKETS = java.util.Arrays.stream(millis(1, 5, 10, 25, 50, 100, 250, 500, 1000,
      2500, 5000, 10_000, 30_000)).mapToDouble(Duration::toNanos).toArray();
  /** How long after its due time the scheduler picked up a consumer's timed work. */
  private static final Duration[] LATENESS_BUCKETS = millis(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 30_000);

  private static final AtomicInteger REGISTRIES = new AtomicInteger();

  private final PrometheusMeterRegistry registry;
  private final Map<String, Counter> published = new ConcurrentHashMap<>();
  private final Map<String, Counter> deliveries = new ConcurrentHashMap<>();
  private final Map<String, Counter> acks = new ConcurrentHashMap<>();
  private final Map<String, Timer> scripts = new ConcurrentHashMap<>();
  private final Counter redeliveries;
  private final Timer confirms;
  private final Timer deliveryLag;
  private final Timer schedulerLateness;
  /** When /metrics was last read (System.nanoTime); the consumer gauges are read only while someone looks. */
  private volatile long scrapedAt = Long.MIN_VALUE;

  public HeraldMetrics() {
    this(new PrometheusMeterRegistry(PrometheusConfig.DEFAULT));
  }

  private HeraldMetrics(PrometheusMeterRegistry registry) {
    this.registry = registry;
    // the Redis client names its pools with random ids, new ones as servers come and go: unbounded
    // labels. Redis' latency is in herald_redis_script_seconds and vertx_redis_* instead.
    registry.config().meterFilter(MeterFilter.deny(id -> "redis".equals(id.getTag("pool_type"))));
    // Vert.x times HTTP responses without buckets: give them some, for percentiles over nodes
    registry.config().meterFilter(new MeterFilter() {
      @Override
      public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
        return id.getName().equals("vertx.http.server.response.time")
            ? DistributionStatisticConfig.builder().serviceLevelObjectives(RESPONSE_BUCKETS).build().merge(config)
            : config;
      }
    });
    redeliveries = Counter.builder("herald_redeliveries").description("Events this node handed out again (deliveryCount > 1)")
        .register(registry);
    confirms = timer("herald_publish_confirm", "Publish requests, from arrival to their answer", CONFIRM_BUCKETS, Tags.empty());
    deliveryLag = timer("herald_delivery_lag", "Events handed out for the first time, from their publish (Redis time)",
        LAG_BUCKETS, Tags.empty());
    schedulerLateness = timer("herald_scheduler_lateness", "Scheduler ticks that found work due: how late the earliest was",
        LATENESS_BUCKETS, Tags.empty());
  }

  /** A Vert.x whose own metrics go to this registry, labelled by route template, method and status. */
  public Vertx vertx(VertxOptions options) {
    // a registry name of its own: Vert.x keeps registries by name, JVM-wide, and would give a second
    // Vert.x of the process (a test's second node) the first one's
    MicrometerMetricsOptions metrics = new MicrometerMetricsOptions().setEnabled(true).addLabels(Label.HTTP_ROUTE)
        .setRegistryName("herald-" + REGISTRIES.incrementAndGet());
    return Vertx.builder().with(new VertxOptions(options).setMetricsOptions(metrics))
        .withMetrics(new MicrometerMetricsFactory(registry)).build();
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /** /metrics was read: the consumer gauges are worth reading from Redis for a while. */
  public void scraped() {
    scrapedAt = System.nanoTime();
  }

  /** Whether /metrics was read within {@code ms}. */
  boolean scrapedWithin(long ms) {
    return scrapedAt != Long.MIN_VALUE && System.nanoTime() - scrapedAt <= ms * 1_000_000;
  }

  /**
   * A publish request's events: {@code result} is "confirmed", "duplicate" (confirmed before, under
   * the same idempotencyKey) or the code each was refused with.
   */
  public void published(String result, int events) {
    meter(published, result, r -> Counter.builder("herald_publish_events").tag("result", r)
        .description("Events published to this node, by outcome: confirmed, duplicate, or the error code").register(registry))
        .increment(events);
  }

  /** A publish request answered, {@code nanos} after it came. */
  public void confirmed(long nanos) {
    confirms.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Events handed out over {@code transport} ("http" or "ws"), {@code again} of them redeliveries. */
  public void delivered(String transport, int events, int again) {
    meter(deliveries, transport, t -> Counter.builder("herald_deliveries").tag("transport", t)
        .description("Events handed out by this node, by transport").register(registry)).increment(events);
    if (again > 0) {
      redeliveries.increment(again);
    }
  }

  /** An event handed out for the first time, {@code lagMs} after its publish. */
  public void firstHandOut(long lagMs) {
    deliveryLag.record(Math.max(0, lagMs), TimeUnit.MILLISECONDS);
  }

  /** Acks answered with {@code result}: ACKED, EXPIRED, UNKNOWN, ... as the protocol says them. */
  public void acked(String result, int count) {
    meter(acks, result, r -> Counter.builder("herald_acks").tag("result", r)
        .description("Acks this node answered, by result").register(registry)).increment(count);
  }

  /** A script call that took {@code nanos} as this node saw it. */
  public void scriptCall(String script, long nanos) {
    meter(scripts, script, s -> timer("herald_redis_script", "Redis script calls, as this node waits for them",
        SCRIPT_BUCKETS, Tags.of("script", s))).record(nanos, TimeUnit.NANOSECONDS);
  }

  /** The scheduler found consumers' work due, the earliest {@code ms} ago. */
  public void schedulerLate(long ms) {
    schedulerLateness.record(Math.max(0, ms), TimeUnit.MILLISECONDS);
  }

  /** The meter of a label value, made the first time (a plain read after that: it is asked at every event). */
  private static <M> M meter(Map<String, M> meters, String label, Function<String, M> make) {
    M meter = meters.get(label);
    return meter != null ? meter : meters.computeIfAbsent(label, make);
  }


  private Timer timer(String name, String description, Duration[] buckets, Tags tags) {
    return Timer.builder(name).description(description).tags(tags).serviceLevelObjectives(buckets)
        .register(registry);
  }

  private static Duration[] millis(double... values) {
    return java.util.Arrays.stream(values).mapToObj(ms -> Duration.ofNanos((long) (ms * 1_000_000))).toArray(Duration[]::new);
  }

}
