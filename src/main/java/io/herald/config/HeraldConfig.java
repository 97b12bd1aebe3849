package io.herald.config;

import io.herald.auth.ApiKey;
import io.herald.auth.JwtSettings;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.TopicName;
import io.herald.settings.SettingsReader;
import io.herald.store.RedisTarget;
import io.herald.store.ReplicaWait;
import io.herald.topic.TopicSettings;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A node's validated configuration ({@code conf/herald.json}).
 *
 * @param http      the HTTP listener
 * @param redis     which Redis to use, or the embedded one
 * @param scheduler the redelivery scheduler
 * @param consumers consumers that exist at start-up, by name
 * @param topics    topic settings written at start-up, by topic
 * @param quotas    gateway-wide and namespace spool quotas
 * @param publishing how publishes are deduplicated
 * @param apiKeys   the API keys callers may present (auth.keys)
 * @param jwt       how JWT bearer tokens are verified (auth.jwt), or null; with neither keys nor JWTs
 *                  the gateway is open and listens on 127.0.0.1 only
 * @param management the metrics and the management listener
 */
public record HeraldConfig(Http http, RedisConfig redis, Scheduler scheduler, Map<String, ConsumerSettings> consumers,
    Map<String, TopicSettings> topics, Quotas quotas, Publishing publishing, List<ApiKey> apiKeys,
    JwtSettings jwt, Management management) {

  /**
   * @param host             the management listener's interface (default 0.0.0.0; 127.0.0.1 for
   *                         an open gateway, as its API's)
   * @param port             a second listener for /health/* and /metrics only, without credentials,
   *                         so that probes and scrapes never queue behind traffic (null: none)
   * @param consumerGaugesMs how often the per-consumer figures of /metrics are read from Redis while
   *                         /metrics is read (100 .. 600000, default 30000)
   */
  public record Management(String host, Integer port, long consumerGaugesMs) {}

  /**
   * @param host          the interface to listen on once API keys are configured (default 0.0.0.0;
   *                      an open gateway listens on 127.0.0.1 whatever this says)
   * @param port          TCP port (0..65535, default 8080; 0 = any free port)
   * @param instances     HTTP verticle instances (1..64, default: the number of cores)
   * @param maxBodyBytes  largest request body (1 KiB .. 256 MiB, default 16 MiB)
   * @param maxEventBytes largest event, measured on its JSON (1 .. 64 MiB, default 1 MiB)
   * @param maxFrameBytes largest WebSocket message; a larger one closes the socket with 1009
   *                      (1 KiB .. 64 MiB, default 4 MiB)
   * @param pingIntervalMs a WebSocket quiet this long is pinged (100 .. 600000, default 30000)
   * @param pongTimeoutMs  ... and closed with 1011 if still quiet this much later (100 .. 600000,
   *                       default 10000)
   * @param allowedOrigins origins (e.g. {@code https://app.example.com}) whose pages may open
   *                       WebSockets besides the gateway's own; {@code "*"} for any (default none)
   * @param idleTimeoutMs  a connection with nothing read or written this long is closed (30 s .. 1 h,
   *                       default 2 min; above the longest long poll and the WebSocket ping cycle)
   * @param drainMs        how long a stopping node waits for the requests and publishes in flight
   *                       (0 .. 300000, default 20000; see {@code lifecycle.Drain})
   * @param h2c            HTTP/2 over clear text, by upgrade or prior knowledge (default false: the
   *                       JDK's HttpClient, which upgrades by default, now and then loses the answer
   *                       of tens of KB that comes with the 101)
   */
  public record Http(String host, int port, int instances, long maxBodyBytes, long maxEventBytes, long maxFrameBytes,
      long pingIntervalMs, long pongTimeoutMs, List<String> allowedOrigins, long idleTimeoutMs, long drainMs,
      boolean h2c) {}

  /**
   * @param target    the Redis to use: {@code redis.url} (or the one of {@code redis.endpoints}) in
   *                  standalone mode, the sentinels of {@code redis.endpoints} and {@code
   *                  redis.masterName} in sentinel mode; null starts the embedded Redis
   * @param poolSize  connections of the node's shared pool (1..1024, default 8); each verticle
   *                  also has one pipelined connection of its own
   * @param timeoutMs a Redis call that takes longer fails (100..60000, default 5000)
   * @param replicaWait {@code redis.waitReplicas} (0..16, default 0) replicas must have taken a
   *                  publish's or a settlement's writes before it is confirmed, waiting at most
   *                  {@code redis.waitTimeoutMs} (1 ms to below timeoutMs / 2, default 1000) for them
   * @param embedded  the embedded Redis, used when target is null
   */
  public record RedisConfig(RedisTarget target, int poolSize, long timeoutMs, ReplicaWait replicaWait,
      Embedded embedded) {
    @Override
    public String toString() {
      // RedisTarget's text hides passwords
      return "RedisConfig[target=" + (target == null ? "embedded" : target) + ", poolSize=" + poolSize
          + ", timeoutMs=" + timeoutMs + ", replicaWait=" + replicaWait + ", embedded=" + embedded + "]";
    }
  }

  /**
   * @param dataDir     where it keeps its AOF (default ./data)
   * @param port        its port (0 = any free port, the default)
   * @param appendfsync AOF fsync policy: always, everysec (default) or no; see README on durability
   */
  public record Embedded(Path dataDir, int port, String appendfsync) {}

  /**
   * @param tickMs    ms between scheduler ticks when nothing is due (5..10000, default 25)
   * @param batchSize most consumers and most entries per consumer moved in one tick (1..10000, default 500)
   * @param sweepMs   ms between sweeps over every consumer that catch retention expiries (1000..3600000, default 60000)
   */
  public record Scheduler(long tickMs, int batchSize, long sweepMs) {}

  /**
   * @param spoolBytes     most bytes spooled gateway-wide (every consumer's queue), or null for none
   * @param namespaces     most bytes spooled for the consumers of each namespace, by namespace
   * @param raisePercent   the spool alert is raised when use reaches this share of spoolBytes (1..100, default 80)
   * @param clearPercent   ... and cleared when it falls below this one (0..raisePercent, default 60)
   * @param syncMs         how soon the ledger learns of spool freed by acks, dead-lettering and
   *                       drops (100..60000, default 1000); publishes it knows of at once
   * @param maxUnackedTotal most delivered-but-unacked events gateway-wide, or null for none; the
   *                       alert percentages apply to it as well
   */
  public record Quotas(Long spoolBytes, Map<String, Long> namespaces, int raisePercent, int clearPercent, long syncMs,
      Long maxUnackedTotal) {
    /** The namespace's quota, or null for none. */
    public Long namespace(String namespace) {
      return namespace == null ? null : namespaces.get(namespace);
    }
  }

  /**
   * @param idempotencyWindowMs how long a topic remembers an idempotencyKey: a repeat within it
   *                            returns the first eventId and is not spooled again (1 s .. 1 d, default 5 min)
   */
  public record Publishing(long idempotencyWindowMs) {}

  /** True when any credentials are configured: the gateway then requires them. */
  public boolean guarded() {
    return !apiKeys.isEmpty() || jwt != null;
  }

  /**
   * {@code redis.mode} (standalone, the default, sentinel or cluster),
   * {@code redis.url} or {@code redis.endpoints} and {@code redis.masterName}, checked together;
   * null for the embedded Redis (standalone, no address given).
   */
  private static RedisTarget redisTarget(SettingsReader redis) {
    String mode = redis.oneOf("mode", "standalone", List.of("standalone", "sentinel", "cluster"));
    String url = redis.text("url", null);
    if (url != null && !url.startsWith("redis://") && !url.startsWith("rediss://")) {
      redis.error("url", "must be a redis:// or rediss:// URL");
    }
    List<String> endpoints = redis.texts("endpoints", 1, 64, List.of());
    if (endpoints.stream().anyMatch(e -> !e.startsWith("redis://") && !e.startsWith("rediss://"))) {
      redis.error("endpoints", "must be redis:// or rediss:// URLs");
    }
    String masterName = redis.text("masterName", null);
    switch (mode) {
      case "sentinel" -> {
        if (endpoints.isEmpty()) {
          redis.error("endpoints", "sentinel mode needs the sentinels' addresses");
        } else if (endpoints.stream().anyMatch(e -> e.matches("rediss?://.*") && !e.matches("rediss?://[^/]*:\\d+/?"))) {
          // without one the client would try 6379, a data node's port: sentinels listen on 26379
          redis.error("endpoints", "each sentinel's address must name its port (sentinels usually listen on 26379)");
        }
        if (masterName == null || masterName.isBlank()) {
          redis.error("masterName", "sentinel mode needs the name the sentinels monitor the primary by");
        }
        if (url != null) {
          redis.error("url", "is for standalone mode; sentinel mode reads endpoints");
        }
        return new RedisTarget(RedisTarget.Mode.SENTINEL, endpoints, masterName);
      }
      case "cluster" -> {
        if (endpoints.isEmpty()) {
          redis.error("endpoints", "cluster mode needs the address of one cluster node or more (seeds)");
        }
        if (masterName != null) {
          redis.error("masterName", "is for sentinel mode");
        }
        if (url != null) {
          redis.error("url", "is for standalone mode; cluster mode reads endpoints");
        }
        return RedisTarget.cluster(endpoints);
      }
      default -> {
        if (masterName != null) {
          redis.error("masterName", "is for sentinel mode");
        }
        if (endpoints.size() > 1 || (url != null && !endpoints.isEmpty())) {
          redis.error("endpoints", "standalone mode takes one server: url, or one endpoint");
        }
        String server = url != null ? url : endpoints.isEmpty() ? null : endpoints.get(0);
        return server == null ? null : RedisTarget.standalone(server);
      }
    }
  }

  /** Validates the whole tree; throws with every problem found. */
  public static HeraldConfig from(JsonObject json) {
    SettingsReader root = new SettingsReader(json);
    SettingsReader http = root.section("http");
    Http httpConfig = new Http(
        http.text("host", "0.0.0.0"),
        (int) http.integer("port", 8080, 0, 65535),
        (int) http.integer("instances", Runtime.getRuntime().availableProcessors(), 1, 64),
        http.integer("maxBodyBytes", 16L << 20, 1024, 256L << 20),
        http.integer("maxEventBytes", 1L << 20, 1, 64L << 20),
        http.integer("maxFrameBytes", 4L << 20, 1024, 64L << 20),
        http.integer("pingIntervalMs", 30_000, 100, 600_000),
        http.integer("pongTimeoutMs", 10_000, 100, 600_000),
        http.texts("allowedOrigins", 0, 100, List.of()),
        http.integer("idleTimeoutMs", 120_000, 30_000, 3_600_000),
        http.integer("drainMs", 20_000, 0, 300_000),
        http.bool("h2c", false));
    if (httpConfig.idleTimeoutMs() <= httpConfig.pingIntervalMs() + httpConfig.pongTimeoutMs()) {
      http.error("idleTimeoutMs", "must be above pingIntervalMs + pongTimeoutMs, or quiet WebSockets are cut");
    }
    http.finish();

    SettingsReader redis = root.section("redis");
    RedisTarget target = redisTarget(redis);
    int poolSize = (int) redis.integer("poolSize", 8, 1, 1024);
    long timeoutMs = redis.integer("timeoutMs", 5000, 100, 60_000);
    int waitReplicas = (int) redis.integer("waitReplicas", 0, 0, 16);
    long waitTimeoutMs = redis.integer("waitTimeoutMs", Math.min(1000, (timeoutMs - 1) / 2), 1, 30_000);
    if (2 * waitTimeoutMs >= timeoutMs) {
      // a confirmed call may wait for the WAIT in flight, then for its own: were that longer than
      // a call's timeout, it would time out and drop connections that were only waiting
      redis.error("waitTimeoutMs", "must be below half of redis.timeoutMs (" + timeoutMs + ")");
    }
    if (waitReplicas > 0 && target == null) {
      redis.error("waitReplicas", "needs a Redis with replicas (redis.url, endpoints or sentinels); the embedded Redis has none");
    }
    SettingsReader embedded = redis.section("embedded");
    Embedded embeddedConfig = new Embedded(
        Path.of(embedded.text("dataDir", "./data")),
        (int) embedded.integer("port", 0, 0, 65535),
        embedded.oneOf("appendfsync", "everysec", List.of("always", "everysec", "no")));
    embedded.finish();
    redis.finish();

    SettingsReader scheduler = root.section("scheduler");
    Scheduler schedulerConfig = new Scheduler(
        scheduler.integer("tickMs", 25, 5, 10_000),
        (int) scheduler.integer("batchSize", 500, 1, 10_000),
        scheduler.integer("sweepMs", 60_000, 1000, 3_600_000));
    scheduler.finish();

    Map<String, ConsumerSettings> consumers = new LinkedHashMap<>();
    SettingsReader consumerSection = root.section("consumers");
    root.members("consumers").keySet().forEach(name -> {
      if (!TopicName.isValidConsumer(name)) {
        consumerSection.error(name, "consumer names are 1..128 characters of A-Z a-z 0-9 . _ -");
        return;
      }
      consumers.put(name, ConsumerSettings.read(name, consumerSection.section(name)));
    });
    Map<String, TopicSettings> topics = new LinkedHashMap<>();
    SettingsReader topicSection = root.section("topics");
    root.members("topics").keySet().forEach(topic -> {
      String problem = TopicName.isSystem(topic) ? "topics under $sys/ are the gateway's own" : TopicName.problem(topic);
      if (problem != null) {
        topicSection.error(topic, problem);
        return;
      }
      topics.put(topic, TopicSettings.read(topic, topicSection.section(topic)));
    });
    SettingsReader quotaSection = root.section("quotas");
    Long spoolBytes = quotaSection.optionalInteger("spoolBytes", 1, Long.MAX_VALUE);
    Map<String, Long> namespaces = new LinkedHashMap<>();
    SettingsReader namespaceSection = quotaSection.section("namespaces");
    quotaSection.members("namespaces").keySet().forEach(namespace -> {
      if (!TopicName.isValidConsumer(namespace)) {
        namespaceSection.error(namespace, "namespace names are 1..128 characters of A-Z a-z 0-9 . _ -");
        return;
      }
      SettingsReader one = namespaceSection.section(namespace);
      namespaces.put(namespace, one.integer("quotaBytes", Long.MAX_VALUE, 1, Long.MAX_VALUE));
      one.finish();
    });
    int raisePercent = (int) quotaSection.integer("raisePercent", 80, 1, 100);
    Quotas quotas = new Quotas(spoolBytes, Map.copyOf(namespaces), raisePercent,
        (int) quotaSection.integer("clearPercent", Math.min(60, raisePercent), 0, raisePercent),
        quotaSection.integer("syncMs", 1000, 100, 60_000),
        quotaSection.optionalInteger("maxUnackedTotal", 1, 1_000_000_000));
    quotaSection.finish();
    SettingsReader publishSection = root.section("publish");
    Publishing publishing = new Publishing(publishSection.integer("idempotencyWindowMs", 300_000, 1000, 86_400_000));
    publishSection.finish();
    List<ApiKey> apiKeys = new ArrayList<>();
    SettingsReader auth = root.section("auth");
    SettingsReader keySection = auth.section("keys");
    auth.members("keys").keySet().forEach(name -> apiKeys.add(ApiKey.read(name, keySection.section(name))));
    JwtSettings jwt = auth.has("jwt") ? JwtSettings.read(auth.section("jwt")) : null;
    auth.finish();
    SettingsReader managementSection = root.section("management");
    Long managementPort = managementSection.optionalInteger("port", 0, 65535);
    Management management = new Management(managementSection.text("host", "0.0.0.0"),
        managementPort == null ? null : managementPort.intValue(),
        managementSection.integer("consumerGaugesMs", 30_000, 100, 600_000));
    managementSection.finish();
    root.finish();
    root.failIfErrors();
    return new HeraldConfig(httpConfig, new RedisConfig(target, poolSize, timeoutMs,
        new ReplicaWait(waitReplicas, waitTimeoutMs), embeddedConfig),
        schedulerConfig, Map.copyOf(consumers), Map.copyOf(topics), quotas, publishing, List.copyOf(apiKeys), jwt,
        management);
  }
}
