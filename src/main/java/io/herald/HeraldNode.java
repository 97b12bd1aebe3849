package io.herald;

import io.herald.ack.AckTrackerVerticle;
import io.herald.ack.Acks;
import io.herald.ack.ConsumerSalts;
import io.herald.ack.Settlements;
import io.herald.auth.ApiKeys;
import io.herald.auth.Authenticator;
import io.herald.auth.BearerTokens;
import io.herald.auth.JwtTokens;
import io.herald.config.HeraldConfig;
import io.herald.console.ConsoleWatchers;
import io.herald.consumer.BacklogUpgrade;
import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerStore;
import io.herald.copy.Copies;
import io.herald.delivery.NotificationVerticle;
import io.herald.delivery.PollService;
import io.herald.http.ApiServices;
import io.herald.http.HttpApiVerticle;
import io.herald.publish.AlertPublisherVerticle;
import io.herald.publish.EventIds;
import io.herald.publish.PublishService;
import io.herald.lifecycle.Drain;
import io.herald.metrics.ConsumerGauges;
import io.herald.metrics.HeraldMetrics;
import io.herald.metrics.ManagementVerticle;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolAccountVerticle;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.redelivery.RedeliverySchedulerVerticle;
import io.herald.store.RedisClock;
import io.herald.store.RedisStore;
import io.herald.store.RedisTarget;
import io.herald.throttle.RateLimiter;
import io.herald.topic.TopicDirectory;
import io.herald.ws.WebSocketGateway;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * One gateway node on a Vert.x instance: declares the configured consumers and topics, then deploys the
 * verticles (notifications, ack tracker, redelivery scheduler, HTTP API) wired by constructor.
 */
public final class HeraldNode {
  /** With no credentials configured the gateway is open, and must only listen locally. */
  static final String OPEN_HOST = "127.0.0.1";
  private static final SecureRandom SECURE_RANDOM = new SecureRandom();
  private static final System.Logger LOG = System.getLogger(HeraldNode.class.getName());
  /** How long a start waits for a Redis Cluster to serve, and how often it asks. */
  private static final long CLUSTER_WAIT_NANOS = 30_000_000_000L;
  /** The copies of events a node keeps decoded (docs/internals.md): a few seconds of a busy node's rounds. */
  private static final long COPY_CACHE_BYTES = 64L << 20;
  private static final long CLUSTER_WAIT_STEP_MS = 100;

  private final Vertx vertx;
  private final RedisStore nodeStore;
  private final String host;
  private final int httpPort;
  /** The management listener's port, or -1 for none. */
  private final int managementPort;
  private final List<String> deployments;
  private final Drain drain;
  /** How long a stopping node waits for the requests and publishes in flight (http.drainMs). */
  private final long drainMs;
  /** One of the HTTP API's instances (they all route alike). */
  private final HttpApiVerticle api;

  private HeraldNode(Vertx vertx, RedisStore nodeStore, String host, int httpPort, int managementPort,
      List<String> deployments, Drain drain, long drainMs, HttpApiVerticle api) {
    this.api = api;
    this.managementPort = managementPort;
    this.vertx = vertx;
    this.drain = drain;
    this.drainMs = drainMs;
    this.nodeStore = nodeStore;
    this.host = host;
    this.httpPort = httpPort;
    this.deployments = deployments;
  }

  /**
   * Starts a node. No node's wall clock matters: every time in the protocol comes from Redis (TIME
   * inside the scripts, or the node's reading of it for eventIds: {@link RedisClock}), so nodes with
   * skewed clocks agree.
   *
   * @param redisUrl the Redis to use (the configured one, or the embedded one's)
   */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, String redisUrl) {
    return start(vertx, config, RedisTarget.standalone(redisUrl));
  }

  /** As {@link #start(Vertx, HeraldConfig, String)}, on {@code redis}: one server or a sentinel set's primary. */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, RedisTarget redis) {
    return start(vertx, config, redis, new HeraldMetrics());
  }

  /**
   * As {@link #start(Vertx, HeraldConfig, RedisTarget)}, its meters in {@code metrics} (with Vert.x's
   * own when {@code vertx} was built by {@link HeraldMetrics#vertx}).
   */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, RedisTarget redis, HeraldMetrics metrics) {
    return start(vertx, config, redis, !config.guarded() ? Authenticator.OPEN : new BearerTokens(
        config.apiKeys().isEmpty() ? null : new ApiKeys(config.apiKeys()),
        config.jwt() == null ? null : new JwtTokens(vertx, config.jwt())), metrics);
  }

  /** As {@link #start(Vertx, HeraldConfig, String)}, letting in only whom {@code authenticator} accepts. */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, String redisUrl,
      Authenticator authenticator) {
    return start(vertx, config, RedisTarget.standalone(redisUrl), authenticator);
  }

  /** As {@link #start(Vertx, HeraldConfig, RedisTarget)}, letting in only whom {@code authenticator} accepts. */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, RedisTarget target,
      Authenticator authenticator) {
    return start(vertx, config, target, authenticator, new HeraldMetrics());
  }

  /** As {@link #start(Vertx, HeraldConfig, RedisTarget, Authenticator)}, its meters in {@code metrics}. */
  public static Future<HeraldNode> start(Vertx vertx, HeraldConfig config, RedisTarget target,
      Authenticator authenticator, HeraldMetrics metrics) {
    HeraldConfig.RedisConfig redis = config.redis();
    String host = authenticator == Authenticator.OPEN ? OPEN_HOST : config.http().host();
    SpoolLedger ledger = new SpoolLedger(vertx, config.quotas(), redis.timeoutMs(),
        target.mode() == RedisTarget.Mode.CLUSTER ? SpoolLedger.CLUSTER_SHARDS : 1);
    RedisStore nodeStore = RedisStore.pooled(vertx, target, redis.poolSize(), redis.timeoutMs(), redis.replicaWait())
        .watchingSpool(ledger::touched).measuring(metrics);
    Supplier<RedisStore> stores = () -> RedisStore.pipelined(vertx, target, redis.timeoutMs(), redis.replicaWait())
        .watchingSpool(ledger::touched).measuring(metrics).sharingScriptsOf(nodeStore);
    ConsumerDirectory directory = new ConsumerDirectory(nodeStore);
    TopicDirectory topics = new TopicDirectory(nodeStore);
    int port = config.http().port() == 0 ? freePort() : config.http().port();
    Integer configuredManagement = config.management().port();
    int managementPort = configuredManagement == null ? -1 : configuredManagement == 0 ? freePort() : configuredManagement;
    List<String> deployments = new ArrayList<>();
    // names this node's wake-up channel; each HTTP verticle instance adds its number for its polls
    String node = HexFormat.of().formatHex(SECURE_RANDOM.generateSeed(6));
    AtomicInteger instances = new AtomicInteger();
    RedisClock clock = new RedisClock();
    // one maker for the node's HTTP verticles: a node's ids sort in the order it made them
    EventIds eventIds = new EventIds(clock);
    ConsumerSalts salts = new ConsumerSalts();
    Drain drain = new Drain();
    ConsoleWatchers watchers = new ConsoleWatchers();
    AtomicReference<HttpApiVerticle> api = new AtomicReference<>();
    Copies copies = new Copies(COPY_CACHE_BYTES);
    ConsumerStore consumers = new ConsumerStore(nodeStore, copies);

    // the configuration's consumers are written again at every start, so their writes need no
    // replica's confirmation: a node starts while a replica is away (its publishes wait for one)
    RedisStore startStore = redis.replicaWait().waits()
        ? RedisStore.pooled(vertx, target, redis.poolSize(), redis.timeoutMs()).sharingScriptsOf(nodeStore) : nodeStore;
    ConsumerStore declared = startStore == nodeStore ? consumers : new ConsumerStore(startStore, copies);

    return nodeStore.loadFunctions()
        .recover(failure -> Future.failedFuture(new IllegalStateException("cannot use Redis at " + target + " ("
            + target.settings() + "): " + Objects.toString(failure.getMessage(), failure.toString()), failure)))
        .compose(ok -> !nodeStore.isCluster() ? Future.succeededFuture()
            : untilServing(vertx, nodeStore, System.nanoTime() + CLUSTER_WAIT_NANOS, false))
        // before the configuration's consumers are written: a Redis without any is a new installation
        .compose(ok -> copies.readLayout(nodeStore))
        .compose(ok -> Future.all(config.consumers().values().stream().map(declared::put).toList()))
        .eventually(() -> startStore == nodeStore ? Future.succeededFuture() : startStore.close())
        .compose(ok -> Future.all(config.topics().values().stream().map(topics::put).toList()))
        .compose(ok -> directory.reload())
        .compose(ok -> BacklogUpgrade.run(nodeStore, directory.all().keySet()))
        .compose(ok -> topics.reload())
        .compose(ok -> deploy(vertx, deployments, new NotificationVerticle(stores, directory, topics, node), 1))
        .compose(ok -> deploy(vertx, deployments, new AckTrackerVerticle(stores, salts, copies), 1))
        .compose(ok -> deploy(vertx, deployments, new RedeliverySchedulerVerticle(stores, directory,
            config.scheduler().tickMs(), config.scheduler().batchSize(), config.scheduler().sweepMs(), metrics, copies), 1))
        .compose(ok -> deploy(vertx, deployments, new ConsumerGauges(stores, directory, metrics, watchers,
            config.management().consumerGaugesMs()), 1))
        .compose(ok -> deploy(vertx, deployments, new SpoolAccountVerticle(stores, directory, ledger), 1))
        .compose(ok -> deploy(vertx, deployments, new AlertPublisherVerticle(stores, directory, topics, ledger, clock, metrics, copies), 1))
        .compose(ok -> config.management().port() == null ? Future.succeededFuture()
            : deploy(vertx, deployments, new ManagementVerticle(stores, drain, metrics,
                authenticator == Authenticator.OPEN ? OPEN_HOST : config.management().host(), managementPort), 1))
        .compose(ok -> vertx.deployVerticle(() -> {
          HttpApiVerticle instance = new HttpApiVerticle(
              apiServices(vertx, config, stores.get(), directory, topics, ledger, eventIds, salts, drain, metrics,
                  node + "/" + instances.incrementAndGet(), copies),
              directory, topics, ledger, host, port, config.http(), authenticator, metrics, watchers);
          api.compareAndSet(null, instance);
          return instance;
        }, new DeploymentOptions().setInstances(config.http().instances())))
        .map(id -> {
          deployments.add(id);
          return new HeraldNode(vertx, nodeStore, host, port, managementPort, deployments, drain, config.http().drainMs(),
              api.get());
        })
        .recover(failure -> nodeStore.close().transform(ignored -> Future.failedFuture(failure)));
  }

  /**
   * Waits until every primary of a cluster says it serves: a cluster just created, or a primary just
   * restarted, refuses calls with keys for a few seconds, and a node that listened meanwhile would
   * answer its first clients {@code 503}. Past the deadline the start goes on (a primary that stays
   * down stops only its own slots' consumers).
   */
  private static Future<Void> untilServing(Vertx vertx, RedisStore store, long deadlineNanos, boolean said) {
    return store.serving(true).recover(failure -> {
      if (System.nanoTime() > deadlineNanos) {
        LOG.log(System.Logger.Level.WARNING, "Starting although the Redis Cluster does not serve yet: " + failure.getMessage());
        return Future.succeededFuture();
      }
      if (!said) {
        LOG.log(System.Logger.Level.INFO, "Waiting for the Redis Cluster to serve: " + failure.getMessage());
      }
      Promise<Void> again = Promise.promise();
      vertx.setTimer(CLUSTER_WAIT_STEP_MS, t -> untilServing(vertx, store, deadlineNanos, true).onComplete(again));
      return again.future();
    });
  }

  /** The services of one HTTP verticle instance, on its own pipelined connection {@code store}. */
  private static ApiServices apiServices(Vertx vertx, HeraldConfig config, RedisStore store, ConsumerDirectory directory,
      TopicDirectory topics, SpoolLedger ledger, EventIds eventIds, ConsumerSalts salts, Drain drain,
      HeraldMetrics metrics, String waiterPrefix, Copies copies) {
    HeraldConfig.Http http = config.http();
    DueTimes dueTimes = new DueTimes(vertx, store);
    HoldSettler settler = new HoldSettler(vertx, store, ledger);
    PublishService publisher = new PublishService(vertx, store, directory, topics, ledger, settler, http.maxEventBytes(),
        dueTimes, config.publishing().idempotencyWindowMs(), eventIds, drain, metrics, copies);
    PollService poller = new PollService(vertx, store, dueTimes, ledger, settler, salts, waiterPrefix, drain, metrics,
        copies);
    Acks acks = new Acks(vertx, config.redis().timeoutMs(), metrics);
    Settlements settlements = new Settlements(store, dueTimes);
    WebSocketGateway sockets = new WebSocketGateway(vertx, poller, new RateLimiter(store), acks, settlements, publisher,
        http.pingIntervalMs(), http.pongTimeoutMs(), (int) http.maxFrameBytes(), drain);
    return new ApiServices(store, publisher, poller, acks, settlements, settler, sockets, waiterPrefix, drain, copies);
  }

  private static Future<Void> deploy(Vertx vertx, List<String> deployments,
      io.vertx.core.Deployable verticle, int instances) {
    return vertx.deployVerticle(verticle, new DeploymentOptions().setInstances(instances))
        .map(id -> {
          deployments.add(id);
          return null;
        });
  }

  /** How long {@link #stop} waits for what is in flight at most. */
  public long drainMs() {
    return drainMs;
  }

  /** The interface the node listens on. */
  public String host() {
    return host;
  }

  /** True when no credentials are required (none configured). */
  public boolean open() {
    return host.equals(OPEN_HOST);
  }

  public int httpPort() {
    return httpPort;
  }

  /** What the HTTP API routes, as "METHOD path" (the router's paths and regular expressions). */
  public List<String> routes() {
    return api.routes();
  }

  /** The management listener's port (management.port), or -1 when there is none. */
  public int managementPort() {
    return managementPort;
  }

  /** Stops accepting requests first (the HTTP API was deployed last), then the rest. */
  public Future<Void> stop() {
    // readiness fails and new publishes, polls and sockets are refused; parked polls answer now;
    // what is in flight finishes, then the verticles stop (sockets close with 1001)
    Future<Void> drained = drain.begin(vertx, drainMs);
    vertx.eventBus().publish(Addresses.WAKE_ALL, null);
    Future<Void> chain = drained;
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
