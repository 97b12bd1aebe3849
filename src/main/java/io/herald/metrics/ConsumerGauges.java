package io.herald.metrics;

import io.herald.Addresses;
import io.herald.console.ConsoleWatchers;
import io.herald.consumer.ConsumerDirectory;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * Reads every consumer's figures for /metrics and the console from Redis, in one pass per interval
 * while /metrics is read, and more often while a console watches: a script call reads {@value #CONSUMERS_PER_CALL} consumers on their server, one call at a
 * time, so a pass holds Redis for a bounded slice at once and the scrape rate does not matter. A
 * call that failed for a key not on its server (a slot moving, a slot table out of date) is made
 * again per consumer, with its keys declared so that the store follows the cluster's redirections;
 * a call that failed otherwise (Redis slow or away) ends the pass. A consumer whose figures could not
 * be read keeps its last ones until the next pass.
 *
 * <p>Dead letters by reason and throttle blocks are Redis' totals per consumer; the counters add
 * what each pass finds they grew by since the last (a consumer seen for the first time sets its
 * baseline), so they only grow, whatever consumers come and go.
 *
 * <p>While a console's live stream is open on the node, a pass starts every
 * {@value #CONSOLE_SHARE} times the last one's duration, at least a second apart (and at least as
 * often as the interval): with 200 consumers that is every second, with 10,000 (a pass of about
 * 1.8 s) every 30 s, so a console never holds Redis for more than a small share of its time. Each
 * such pass publishes every consumer's figures and rates to the node's HTTP verticles.
 */
public final class ConsumerGauges extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(ConsumerGauges.class.getName());
  /** Consumers per script call: about 1 ms of Redis at a time (some 50 µs a consumer). */
  static final int CONSUMERS_PER_CALL = 20;
  /** How often the timer looks whether a pass is due. */
  private static final long LOOK_MS = 1000;
  /** A console's passes are this many times their duration apart, so they hold Redis for a small share of its time. */
  private static final int CONSOLE_SHARE = 20;
  /** Figures per consumer in the script's answer (consumer_gauges.lua), in this order. */
  private static final int FIGURES = 15;
  private static final int BACKLOG = 0;
  private static final int UNACKED = 1;
  private static final int DEAD_LETTERS = 2;
  private static final int FIRST_HAND_OUT = 3;
  /** Throttle blocks, then dead letters by reason: Redis' totals, the counters' sources. */
  private static final int TOTALS = 4;
  private static final int STALE = 9;
  private static final int ERRORS = 10;
  private static final int PUBLISHED = 11;
  private static final int DELIVERED = 12;
  private static final int ACKED = 13;
  private static final int BLOCKED_UNTIL = 14;
  private static final String[] DEAD_LETTER_REASONS = {"MAX_DELIVERIES", "TTL_EXPIRED", "RETENTION", "REJECTED"};

  /** A consumer's figures as read, and Redis' time of the read: replaced whole, never changed. */
  private record Read(long[] figures, long at) {}

  /**
   * Where a consumer's gauges read: the latest {@link Read}, published to scraping threads, and the
   * one before it (for the console's rates; only the verticle's event loop reads it).
   */
  private static final class Latest {
    private volatile Read read;
    private Read before;
  }

  /** A per-consumer gauge: its name, description, and what it shows of a read. */
  private record Shown(String name, String description, ToDoubleFunction<Read> value) {}

  private static final List<Shown> SHOWN = List.of(
      new Shown("herald_consumer_backlog", "Events spooled and not handed out yet", read -> read.figures()[BACKLOG]),
      new Shown("herald_consumer_unacked", "Events handed out and not acked (pending or stale)",
          read -> read.figures()[UNACKED]),
      new Shown("herald_consumer_dead_letters", "Events in the dead-letter queue",
          read -> read.figures()[DEAD_LETTERS]),
      new Shown("herald_consumer_oldest_unacked_age_seconds",
          "Since the first hand-out of the oldest unacked event (0: none)",
          read -> oldestUnackedAgeMs(read) / 1000.0));

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final HeraldMetrics metrics;
  private final ConsoleWatchers watchers;
  private final long intervalMs;
  /** Each consumer's latest figures; only this verticle's event loop changes the map. */
  private final Map<String, Latest> latest = new HashMap<>();
  private final Map<String, List<Meter>> meters = new HashMap<>();
  /** Throttle blocks, then dead letters by reason. */
  private final Counter[] totals = new Counter[1 + DEAD_LETTER_REASONS.length];
  private RedisStore store;
  private MeterRegistry registry;
  private boolean passing;
  private long lastPass = Long.MIN_VALUE;
  private long lastPassNanos;
  /** Redis' time of the latest read. */
  private long lastReadAt;

  /** @param intervalMs how often the figures are read while /metrics is read */
  public ConsumerGauges(Supplier<RedisStore> stores, ConsumerDirectory directory, HeraldMetrics metrics,
      ConsoleWatchers watchers, long intervalMs) {
    this.stores = stores;
    this.directory = directory;
    this.metrics = metrics;
    this.watchers = watchers;
    this.intervalMs = intervalMs;
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    registry = metrics.registry();
    totals[0] = Counter.builder("herald_throttle_blocks")
        .description("Times a consumer went over its poll rate and was blocked, as read from Redis").register(registry);
    for (int i = 0; i < DEAD_LETTER_REASONS.length; i++) {
      totals[i + 1] = Counter.builder("herald_dead_letters").tag("reason", DEAD_LETTER_REASONS[i])
          .description("Events dead-lettered, by reason (REJECTED: to the error queue), as read from Redis")
          .register(registry);
    }
    // a node nobody scrapes reads nothing; one scraped now and then reads once per interval, the
    // first time within LOOK_MS of its first scrape
    vertx.setPeriodic(Math.min(LOOK_MS, intervalMs), t -> {
      boolean watched = watchers.any();
      long everyMs = watched
          ? Math.min(intervalMs, Math.max(LOOK_MS, CONSOLE_SHARE * lastPassNanos / 1_000_000)) : intervalMs;
      // with a tenth of a look's slack: the timer's ticks are as far apart as the passes may be
      boolean due = lastPass == Long.MIN_VALUE || System.nanoTime() - lastPass >= (everyMs - LOOK_MS / 10) * 1_000_000;
      if (!passing && due && (watched || metrics.scrapedWithin(Math.max(3 * intervalMs, 60_000)))) {
        passing = true;
        lastPass = System.nanoTime();
        pass().onComplete(done -> {
          passing = false;
          lastPassNanos = System.nanoTime() - lastPass;
          if (done.failed()) {
            LOG.log(System.Logger.Level.DEBUG, "Consumer figures not read: " + done.cause().getMessage());
          }
          if (watchers.any()) {
            // what could be read, even if the pass ended early: the console says how old it is
            vertx.eventBus().publish(Addresses.CONSOLE_FIGURES, figures(everyMs));
          }
        });
      }
    });
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    return store.close();
  }

  /** Reads every consumer's figures, a call at a time. */
  Future<Void> pass() {
    // on a cluster, where each consumer's keys are now
    return store.readSlots().recover(failure -> Future.succeededFuture()).compose(read -> {
      Future<Void> chain = Future.succeededFuture();
      for (List<String> consumers : calls(new ArrayList<>(directory.all().keySet()))) {
        chain = chain.compose(ok -> read(consumers));
      }
      return chain;
    }).onComplete(done -> latest.keySet().stream().filter(c -> !directory.all().containsKey(c)).toList()
        .forEach(this::forget));
  }

  /** The consumers in groups of at most CONSUMERS_PER_CALL, each group's keys on one server as the store knows. */
  private List<List<String>> calls(List<String> consumers) {
    Map<String, List<String>> byServer = new LinkedHashMap<>();
    for (String consumer : consumers) {
      byServer.computeIfAbsent(store.serverOf(Keys.consumer(consumer).get(0)), s -> new ArrayList<>()).add(consumer);
    }
    List<List<String>> calls = new ArrayList<>();
    for (List<String> group : byServer.values()) {
      for (int from = 0; from < group.size(); from += CONSUMERS_PER_CALL) {
        calls.add(group.subList(from, Math.min(group.size(), from + CONSUMERS_PER_CALL)));
      }
    }
    return calls;
  }

  private Future<Void> read(List<String> consumers) {
    List<Object> args = new ArrayList<>(1 + consumers.size() * 27);
    args.add(Keys.consumer(consumers.get(0)).size());
    consumers.forEach(consumer -> args.addAll(Keys.consumer(consumer)));
    return store.evalReadingMany(Script.CONSUMER_GAUGES, Keys.consumer(consumers.get(0)).get(0), args)
        .map(reply -> {
          take(consumers, reply);
          return (Void) null;
        })
        .recover(failure -> {
          if (!misrouted(failure)) {
            // Redis slow or away: this pass ends here, the figures read so far stand
            return Future.failedFuture(failure);
          }
          // a key not on the server the call went to: one consumer a call, routed by its keys
          LOG.log(System.Logger.Level.DEBUG, "Consumer figures for /metrics read one by one: " + failure.getMessage());
          Future<Void> each = Future.succeededFuture();
          for (String consumer : consumers) {
            each = each.compose(ok -> store.eval(Script.CONSUMER_GAUGES, Keys.consumer(consumer), List.of())
                .map(reply -> {
                  take(List.of(consumer), reply);
                  return (Void) null;
                })
                // its last figures stand until the next pass
                .otherwise((Void) null));
          }
          return each;
        });
  }

  /**
   * Whether a call failed because some of its consumers' keys are not on the server it went to (a
   * slot moved or moving, a slot table out of date), not because Redis is slow or away.
   */
  private static boolean misrouted(Throwable failure) {
    String message = String.valueOf(failure.getMessage());
    return message.contains("non local key") || message.contains("CROSSSLOT") || message.contains("MOVED")
        || message.contains("ASK") || message.contains("TRYAGAIN") || message.contains("CLUSTERDOWN");
  }

  private void take(List<String> consumers, Response reply) {
    long now = reply.get(0).toLong();
    lastReadAt = Math.max(lastReadAt, now);
    for (int c = 0; c < consumers.size(); c++) {
      String consumer = consumers.get(c);
      Response row = reply.get(c + 1);
      if (row.size() == 0) {
        forget(consumer);
        continue;
      }
      long[] figures = new long[FIGURES];
      for (int i = 0; i < FIGURES; i++) {
        figures[i] = row.get(i).toLong();
      }
      Read read = new Read(figures, now);
      Latest shown = latest.get(consumer);
      if (shown == null) {
        show(consumer, read);
        continue;
      }
      for (int i = 0; i < totals.length; i++) {
        long grew = figures[TOTALS + i] - shown.read.figures()[TOTALS + i];
        if (grew > 0) {
          totals[i].increment(grew);
        }
      }
      shown.before = shown.read;
      shown.read = read;
    }
  }

  /**
   * Every consumer's latest figures as the console shows them, with its publish, delivery and ack
   * rates (per second, between its last two reads; null until it was read twice).
   */
  private String figures(long everyMs) {
    JsonArray consumers = new JsonArray();
    new TreeMap<>(latest).forEach((consumer, shown) -> {
      long[] figures = shown.read.figures();
      consumers.add(new JsonObject().put("consumer", consumer)
          .put("backlog", figures[BACKLOG]).put("unacked", figures[UNACKED]).put("stale", figures[STALE])
          .put("deadLetters", figures[DEAD_LETTERS]).put("errors", figures[ERRORS])
          .put("oldestUnackedAgeMs", oldestUnackedAgeMs(shown.read))
          .put("blockedUntil", figures[BLOCKED_UNTIL] > 0 ? figures[BLOCKED_UNTIL] : null)
          .put("rates", rates(shown.before, shown.read)));
    });
    return new JsonObject().put("at", lastReadAt).put("everyMs", everyMs).put("consumers", consumers).encode();
  }

  private static JsonObject rates(Read before, Read now) {
    long ms = before == null ? 0 : now.at() - before.at();
    if (ms <= 0) {
      return null;
    }
    JsonObject rates = new JsonObject();
    for (int i : new int[] {PUBLISHED, DELIVERED, ACKED}) {
      // a consumer deleted and made again between two reads starts from 0: no negative rate
      long grew = Math.max(0, now.figures()[i] - before.figures()[i]);
      rates.put(i == PUBLISHED ? "published" : i == DELIVERED ? "delivered" : "acked", Math.round(grew * 10_000.0 / ms) / 10.0);
    }
    return rates;
  }

  private static long oldestUnackedAgeMs(Read read) {
    long firstHandOut = read.figures()[FIRST_HAND_OUT];
    return firstHandOut < 0 ? 0 : Math.max(0, read.at() - firstHandOut);
  }

  /** Registers the gauges of a consumer seen for the first time, reading its latest figures. */
  private void show(String consumer, Read first) {
    Latest shown = new Latest();
    shown.read = first;
    List<Meter> gauges = new ArrayList<>(SHOWN.size());
    for (Shown gauge : SHOWN) {
      gauges.add(Gauge.builder(gauge.name(), shown, s -> gauge.value().applyAsDouble(s.read))
          .description(gauge.description()).tag("consumer", consumer).strongReference(true).register(registry));
    }
    latest.put(consumer, shown);
    meters.put(consumer, gauges);
  }

  private void forget(String consumer) {
    latest.remove(consumer);
    List<Meter> gauges = meters.remove(consumer);
    if (gauges != null) {
      gauges.forEach(registry::remove);
    }
  }
}
