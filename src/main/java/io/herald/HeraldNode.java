package io.herald;

import io.herald.ack.AckTrackerVerticle;
import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.consumer.ConsumerStore;
import io.herald.delivery.NotificationVerticle;
import io.herald.http.HttpApiVerticle;
import io.herald.redelivery.RedeliverySchedulerVerticle;
import io.herald.store.RedisClock;
import io.herald.store.RedisStore;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * One gateway node on a Vert.x instance: declares the configured consumers, then deploys the
 * verticles (notifications, ack tracker, redelivery scheduler, HTTP API) wired by constructor.
 */
public final class HeraldNode {
  /** No credentials can be configured yet, so the gateway is open and must only listen locally. */
  static final String OPEN_HOST = "127.0.0.1";
  private static final long CLOCK_SYNC_MS = 10_000;

  private final Vertx vertx;
  private final RedisStore nodeStore;
  private final int httpPort;
  private final List<String> deployments;
  private final long clockTimer;

  private HeraldNode(Vertx vertx, RedisStore nodeStore, int httpPort, List<String> deployments, long clockTimer) {
    this.vertx = vertx;
    this.nodeStore = nodeStore;
    this.httpPort = httpPort;
    this.deployments = deployments;
    this.clockTimer = clockTimer;
  }

  /**
   * @param redisUrl   the Redis to use (the configured one, or the embedded one's)
   * @param localClock this machine's clock in ms; tests pass a skewed one
   */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, String redisUrl, LongSupplier localClock) {
    HeraldConfig.RedisConfig redis = config.redis();
    Supplier<RedisStore> stores = () -> new RedisStore(vertx, redisUrl, redis.poolSize(), redis.timeoutMs());
    RedisStore nodeStore = stores.get();
    RedisClock clock = new RedisClock(localClock);
    ConsumerDirectory directory = new ConsumerDirectory(nodeStore);
    ConsumerStore consumers = new ConsumerStore(nodeStore);
    int port = config.http().port() == 0 ? freePort() : config.http().port();
    List<String> deployments = new ArrayList<>();

    return clock.sync(nodeStore)
        .compose(ok -> Future.all(config.consumers().values().stream().map(consumers::put).toList()))
        .compose(ok -> directory.reload())
        .compose(ok -> deploy(vertx, deployments, new NotificationVerticle(stores, directory), 1))
        .compose(ok -> deploy(vertx, deployments, new AckTrackerVerticle(stores), 1))
        .compose(ok -> deploy(vertx, deployments, new RedeliverySchedulerVerticle(stores, clock, directory,
            config.scheduler().tickMs(), config.scheduler().batchSize(), config.scheduler().sweepMs()), 1))
        .compose(ok -> vertx.deployVerticle(() -> new HttpApiVerticle(stores, directory, clock, OPEN_HOST, port,
                config.http().maxBodyBytes(), config.http().maxEventBytes(), redis.timeoutMs()),
            new DeploymentOptions().setInstances(config.http().instances())))
        .map(id -> {
          deployments.add(id);
          long clockTimer = vertx.setPeriodic(CLOCK_SYNC_MS, t -> clock.sync(nodeStore));
          return new HeraldNode(vertx, nodeStore, port, deployments, clockTimer);
        })
        .recover(failure -> nodeStore.close().transform(ignored -> Future.failedFuture(failure)));
  }

  private static Future<Void> deploy(Vertx vertx, List<String> deployments,
      io.vertx.core.Deployable verticle, int instances) {
    return vertx.deployVerticle(verticle, new DeploymentOptions().setInstances(instances))
        .map(id -> {
          deployments.add(id);
          return null;
        });
  }

  public int httpPort() {
    return httpPort;
  }

  /** Stops accepting requests first (the HTTP API was deployed last), then the rest. */
  public Future<Void> stop() {
    vertx.cancelTimer(clockTimer);
    Future<Void> chain = Future.succeededFuture();
    for (int i = deployments.size() - 1; i >= 0; i--) {
      String id = deployments.get(i);
      chain = chain.compose(ok -> vertx.undeploy(id));
    }
    return chain.eventually(nodeStore::close);
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
