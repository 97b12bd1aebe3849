package io.herald.redelivery;

import io.herald.consumer.ConsumerDirectory;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The redelivery scheduler. The due index ({@link DueIndex}) holds, per consumer, when its timed
 * work (a deadline, a backoff, a retention expiry) next falls due; each tick takes the consumers
 * that are due now, runs their scheduler step (one script each, bounded), and files their next due
 * time. A tick costs what is due, not what is pending; idle consumers cost nothing. Every node
 * runs one: the scripts re-check each entry inside Redis, so two schedulers never move one twice.
 * A slow sweep over every consumer catches due times that a crashed node never filed.
 */
public final class RedeliverySchedulerVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(RedeliverySchedulerVerticle.class.getName());

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final long tickMs;
  private final int batchSize;
  private final long sweepMs;
  private RedisStore store;
  private DueIndex index;
  private boolean stopped;
  /** Per shard of the index, whether its ticks fail now; and how many do (logged when it becomes 1, and 0). */
  private boolean[] failing;
  private int failingShards;
  private long sweepTimer;

  public RedeliverySchedulerVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory,
      long tickMs, int batchSize, long sweepMs) {
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
    // each shard of the index ticks on its own: one whose primary is away holds up no other
    for (int shard = 0; shard < index.shards(); shard++) {
      int ticked = shard;
      vertx.setTimer(tickMs, t -> tick(ticked));
    }
    sweepTimer = vertx.setPeriodic(sweepMs, t -> sweep());
    return Future.succeededFuture();
  }

  @Override
  public Future<?> stop() {
    stopped = true;
    vertx.cancelTimer(sweepTimer);
    return store.close();
  }

  private void tick(int shard) {
    if (stopped) {
      return;
    }
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
      // a full batch means more is due: go on at once
      boolean more = done.succeeded() && done.result();
      if (!stopped) {
        vertx.setTimer(more ? 1 : tickMs, t -> tick(shard));
      }
    });
  }

  /** One shard of the index: the consumers due now, worked on; true when it had a full batch of them. */
  private Future<Boolean> shardTick(int shard) {
    List<String> keys = index.keys(shard);
    return store.eval(Script.DUE_LIST, keys.subList(0, 1), List.of(batchSize)).compose(due -> {
      List<String> consumers = new ArrayList<>();
      due.forEach(name -> consumers.add(name.toString()));
      return work(keys, consumers).map(consumers.size() == batchSize);
    });
  }

  /** Runs the scheduler step of each consumer and files its next due time in the shard {@code keys} name. */
  private Future<Void> work(List<String> keys, List<String> consumers) {
    if (consumers.isEmpty()) {
      return Future.succeededFuture();
    }
    Request versions = Request.cmd(Command.HMGET).arg(keys.get(1));
    consumers.forEach(versions::arg);
    return store.send(versions).compose(seen -> {
      List<Future<Response>> steps = new ArrayList<>();
      for (int i = 0; i < consumers.size(); i++) {
        String consumer = consumers.get(i);
        String version = seen.get(i) == null ? "" : seen.get(i).toString();
        steps.add(step(consumer).compose(next -> store.eval(Script.DUE_UPDATE, keys, List.of(consumer, next, version))));
      }
      return Future.join(steps).mapEmpty();
    });
  }

  private Future<Long> step(String consumer) {
    return store.eval(Script.REDELIVER, Keys.consumer(consumer), List.of(batchSize))
        .map(Response::toLong);
  }

  /** Files every known consumer's due time again: a safety net, at a slow pace. */
  private void sweep() {
    for (String consumer : directory.all().keySet()) {
      step(consumer)
          .compose(next -> next < 0 ? Future.succeededFuture()
              : store.eval(Script.DUE_LOWER, index.keysOf(consumer), List.of(consumer, next)))
          .onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Sweep of " + consumer + " failed: " + failure));
    }
  }
}
