package io.herald.redelivery;

import io.herald.Addresses;
import io.herald.consumer.ConsumerDirectory;
import io.herald.copy.Copies;
import io.herald.metrics.HeraldMetrics;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.json.JsonArray;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * The redelivery scheduler. The due index ({@link DueIndex}) holds, per consumer, when its timed
 * work (a deadline, a backoff, a retention expiry) next falls due; each tick takes the consumers
 * that are due now, runs their scheduler step (one script each, bounded), and files their next due
 * time. A tick costs what is due, not what is pending; idle consumers cost nothing. Every node
 * runs one: the scripts re-check each entry inside Redis, so two schedulers never move one twice.
 * A slow sweep over every consumer catches due times that a crashed node never filed.
 *
 * <p>A shard with nothing due soon is not read every tick: its next tick is at its earliest entry
 * (no sooner than {@code tickMs}, no later than {@value #IDLE_TICK_MS} ms), brought forward when
 * this node files an earlier time ({@link Addresses#DUE_FILED}). Another node's filings wake that
 * node's scheduler; this one sees them within {@value #IDLE_TICK_MS} ms. On a cluster's 16 shards
 * that is 16 reads a second where every tick read every shard (640 a second at 25 ms).
 */
public final class RedeliverySchedulerVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(RedeliverySchedulerVerticle.class.getName());
  /** The longest a shard goes unread. */
  static final long IDLE_TICK_MS = 1000;
  private static final long NONE = Long.MAX_VALUE;
  /** Consumers a sweep steps at once. */
  private static final int SWEEP_GROUP = 500;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final long tickMs;
  private final int batchSize;
  private final long sweepMs;
  private final HeraldMetrics metrics;
  private final Copies copies;
  private RedisStore store;
  private DueIndex index;
  private boolean stopped;
  /** Per shard of the index, whether its ticks fail now; and how many do (logged when it becomes 1, and 0). */
  private boolean[] failing;
  private int failingShards;
  private long sweepTimer;
  private boolean sweeping;
  /** Per shard: the timer of its next tick (-1 while a tick runs), and the Redis time it is set for. */
  private long[] timers;
  private long[] plannedAt;
  /** Per shard: the earliest due time filed while its tick ran ({@link #NONE}: none). */
  private long[] filedMeanwhile;
  /** Per shard: Redis' clock as its last due list read it, and this node's monotonic clock then. */
  private long[] redisNow;
  private long[] redisNowReadAt;
  /** Per shard: when its last tick began (this node's monotonic clock). */
  private long[] tickedAt;

  public RedeliverySchedulerVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory,
      long tickMs, int batchSize, long sweepMs, HeraldMetrics metrics, Copies copies) {
    this.metrics = metrics;
    this.copies = copies;
    this.stores = stores;
    this.directory = directory;
    this.tickMs = tickMs;
    this.batchSize = batchSize;
    this.sweepMs = sweepMs;
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    index = DueIndex.of(store);
    failing = new boolean[index.shards()];
    timers = new long[index.shards()];
    plannedAt = new long[index.shards()];
    filedMeanwhile = new long[index.shards()];
    Arrays.fill(filedMeanwhile, NONE);
    redisNow = new long[index.shards()];
    redisNowReadAt = new long[index.shards()];
    tickedAt = new long[index.shards()];
    Arrays.fill(redisNowReadAt, System.nanoTime());
    Arrays.fill(tickedAt, System.nanoTime());
    // each shard of the index ticks on its own: one whose primary is away holds up no other
    for (int shard = 0; shard < index.shards(); shard++) {
      plan(shard, tickMs);
    }
    vertx.eventBus().<JsonArray>localConsumer(Addresses.DUE_FILED,
        message -> filed(message.body().getInteger(0), message.body().getLong(1)));
    sweepTimer = vertx.setPeriodic(sweepMs, t -> sweep());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(sweepTimer);
    return store.close();
  }

  /** Redis' time now, as this node reckons it from the shard's last due list (0 before the first). */
  private long redisNow(int shard) {
    return redisNow[shard] + (System.nanoTime() - redisNowReadAt[shard]) / 1_000_000;
  }

  private void plan(int shard, long delayMs) {
    plannedAt[shard] = redisNow(shard) + delayMs;
    timers[shard] = vertx.setTimer(delayMs, t -> tick(shard));
  }

  /**
   * A due time was filed in the shard: its next tick comes no later than that, and no sooner than
   * {@code tickMs} after the last one began.
   */
  private void filed(int shard, long at) {
    if (stopped || shard >= timers.length) {
      return;
    }
    if (timers[shard] < 0) {
      filedMeanwhile[shard] = Math.min(filedMeanwhile[shard], at);
      return;
    }
    long sinceTickMs = (System.nanoTime() - tickedAt[shard]) / 1_000_000;
    long delayMs = Math.max(Math.max(1, tickMs - sinceTickMs), at - redisNow(shard));
    if (redisNow(shard) + delayMs < plannedAt[shard] && vertx.cancelTimer(timers[shard])) {
      plan(shard, delayMs);
    }
  }

  private void tick(int shard) {
    if (stopped) {
      return;
    }
    timers[shard] = -1;
    tickedAt[shard] = System.nanoTime();
    shardTick(shard).onComplete(done -> {
      if (done.failed() != failing[shard]) {
        failing[shard] = done.failed();
        failingShards += done.failed() ? 1 : -1;
        // said once when ticks start failing and once when they all work again, not every tick
        if (done.failed() && failingShards == 1) {
          LOG.log(System.Logger.Level.WARNING, "Redelivery scheduler ticks fail: " + done.cause().getMessage());
        } else if (!done.failed() && failingShards == 0) {
          LOG.log(System.Logger.Level.INFO, "Redelivery scheduler ticks work again");
        }
      }
      long filed = filedMeanwhile[shard];
      filedMeanwhile[shard] = NONE;
      if (stopped) {
        return;
      }
      if (done.failed()) {
        plan(shard, tickMs);
        return;
      }
      // NONE: nothing timed in the shard that this tick saw; 0: a full batch, so more is due now
      long next = Math.min(done.result(), filed);
      plan(shard, next == 0 ? 1 : Math.max(tickMs, Math.min(IDLE_TICK_MS, next - redisNow(shard))));
    });
  }

  /**
   * One shard of the index: the consumers due now, worked on. Returns when the shard next has work
   * (Redis time): 0 after a full batch, {@link #NONE} when nothing is timed.
   */
  private Future<Long> shardTick(int shard) {
    List<String> keys = index.keys(shard);
    return store.eval(Script.DUE_LIST, keys.subList(0, 1), List.of(batchSize)).compose(due -> {
      redisNow[shard] = due.get(0).toLong();
      redisNowReadAt[shard] = System.nanoTime();
      long after = due.get(1).toLong();
      long earliest = due.get(2).toLong();
      if (earliest >= 0) {
        metrics.schedulerLate(redisNow[shard] - earliest);
      }
      List<String> consumers = new ArrayList<>();
      for (int i = 3; i < due.size(); i++) {
        consumers.add(due.get(i).toString());
      }
      // a step that failed is tried again after tickMs, as the tick of a shard that failed
      long retryAt = redisNow[shard] + tickMs;
      return work(keys, consumers, retryAt).map(steps -> consumers.size() == batchSize && steps != retryAt
          ? 0L : Math.min(after < 0 ? NONE : after, steps));
    });
  }

  /**
   * Runs the scheduler step of each consumer and files its next due time in the shard {@code keys}
   * name; returns the earliest of those ({@link #NONE}: none), {@code retryAt} for a step that failed.
   */
  private Future<Long> work(List<String> keys, List<String> consumers, long retryAt) {
    if (consumers.isEmpty()) {
      return Future.succeededFuture(NONE);
    }
    Request versions = Request.cmd(Command.HMGET).arg(keys.get(1));
    consumers.forEach(versions::arg);
    return store.send(versions).compose(seen -> {
      List<Future<Long>> steps = new ArrayList<>();
      for (int i = 0; i < consumers.size(); i++) {
        String consumer = consumers.get(i);
        String version = seen.get(i) == null ? "" : seen.get(i).toString();
        steps.add(step(consumer).compose(next -> store.eval(Script.DUE_UPDATE, keys, List.of(consumer, next, version))
            .map(next < 0 ? NONE : next))
            // its entry stays due, for the shard's tick at retryAt; the others' results stand
            .recover(failure -> {
              LOG.log(System.Logger.Level.DEBUG, "Scheduler step of " + consumer + " failed: " + failure.getMessage());
              return Future.succeededFuture(retryAt);
            }));
      }
      return Future.join(steps).map(joined -> steps.stream().mapToLong(Future::result).min().orElse(NONE));
    });
  }

  private Future<Long> step(String consumer) {
    return store.eval(Script.REDELIVER, Keys.consumer(consumer), List.of(batchSize))
        .map(reply -> {
          copies.releaseAnswered(store, consumer, reply, 1);
          return reply.get(0).toLong();
        });
  }

  /**
   * Files every known consumer's due time again: a safety net, at a slow pace, {@value #SWEEP_GROUP}
   * consumers at a time (all at once, 10,000 consumers' calls would overflow the connection's queue).
   */
  private void sweep() {
    if (sweeping) {
      return;
    }
    sweeping = true;
    List<String> consumers = new ArrayList<>(directory.all().keySet());
    Future<Void> chain = Future.succeededFuture();
    for (int from = 0; from < consumers.size(); from += SWEEP_GROUP) {
      List<String> group = consumers.subList(from, Math.min(consumers.size(), from + SWEEP_GROUP));
      chain = chain.compose(ok -> stopped ? Future.succeededFuture()
          : Future.join(group.stream().map(this::sweep).toList()).<Void>mapEmpty().otherwiseEmpty());
    }
    chain.onComplete(done -> sweeping = false);
  }

  private Future<Void> sweep(String consumer) {
    return step(consumer)
        .compose(next -> next < 0 ? Future.<Void>succeededFuture()
            : store.eval(Script.DUE_LOWER, index.keysOf(consumer), List.of(consumer, next))
                .onSuccess(filed -> filed(index.shardOf(consumer), next)).<Void>mapEmpty())
        .onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Sweep of " + consumer + " failed: " + failure));
  }
}
