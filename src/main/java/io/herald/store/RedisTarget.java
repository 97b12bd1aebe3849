package io.herald.store;

import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.RedisRole;
import java.util.List;

/**
 * Which Redis a node uses: one server, the primary that a set of Redis Sentinels names (found
 * again through them after a failover), or a Redis Cluster.
 *
 * @param mode       how the endpoints are read
 * @param endpoints  {@code redis://[user:password@]host:port}: the server, the sentinels, or
 *                   cluster nodes to learn the cluster from (seeds)
 * @param masterName the name the sentinels monitor the primary by (sentinel mode), else null
 */
public record RedisTarget(Mode mode, List<String> endpoints, String masterName) {
  public enum Mode { STANDALONE, SENTINEL, CLUSTER }

  public RedisTarget {
    endpoints = List.copyOf(endpoints);
  }

  public static RedisTarget standalone(String url) {
    return new RedisTarget(Mode.STANDALONE, List.of(url), null);
  }

  public static RedisTarget cluster(List<String> seeds) {
    return new RedisTarget(Mode.CLUSTER, seeds, null);
  }

  /**
   * The client options that reach it (pool, timeouts and network options are the caller's); on a
   * cluster, each primary is reached as a server of its own (see {@link RedisStore}).
   */
  RedisOptions options() {
    RedisOptions options = new RedisOptions().setEndpoints(endpoints);
    if (mode == Mode.SENTINEL) {
      // a client asks the sentinels for the primary when it connects (and keeps the answer a
      // second); RedisStore replaces its client when a connection reaches a server no longer primary
      options.setType(RedisClientType.SENTINEL).setMasterName(masterName).setRole(RedisRole.MASTER);
    }
    return options;
  }

  /** A Redis URL with its credentials hidden, for logs and messages. */
  static String masked(String url) {
    return url.replaceAll("//[^@/]*@", "//***@");
  }

  /** The settings (and their environment variables) that name this target, for start-up errors. */
  public String settings() {
    return switch (mode) {
      case STANDALONE -> "redis.url / HERALD_REDIS_URL";
      case SENTINEL -> "redis.endpoints / HERALD_REDIS_ENDPOINTS, redis.masterName / HERALD_REDIS_MASTER";
      case CLUSTER -> "redis.endpoints / HERALD_REDIS_ENDPOINTS";
    };
  }

  @Override
  public String toString() {
    // a Redis URL may carry a password
    return mode.name().toLowerCase(java.util.Locale.ROOT) + " " + String.join(",",
        endpoints.stream().map(RedisTarget::masked).toList())
        + (masterName == null ? "" : " master " + masterName);
  }
}
