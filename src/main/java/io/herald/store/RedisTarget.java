package io.herald.store;

import io.vertx.redis.client.RedisClientType;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.RedisRole;
import java.util.List;

/**
 * Which Redis a node uses: one server, or the primary that a set of Redis Sentinels names (found
 * again through them after a failover).
 *
 * @param mode       how the endpoints are read
 * @param endpoints  {@code redis://[user:password@]host:port}: the server, or the sentinels
 * @param masterName the name the sentinels monitor the primary by (sentinel mode), else null
 */
public record RedisTarget(Mode mode, List<String> endpoints, String masterName) {
  public enum Mode { STANDALONE, SENTINEL }

  public RedisTarget {
    endpoints = List.copyOf(endpoints);
  }

  public static RedisTarget standalone(String url) {
    return new RedisTarget(Mode.STANDALONE, List.of(url), null);
  }

  /** The client options that reach it (pool, timeouts and network options are the caller's). */
  RedisOptions options() {
    RedisOptions options = new RedisOptions().setEndpoints(endpoints);
    if (mode == Mode.SENTINEL) {
      // a client asks the sentinels for the primary when it connects (and keeps the answer a
      // second); RedisStore replaces its client when a connection reaches a server no longer primary
      options.setType(RedisClientType.SENTINEL).setMasterName(masterName).setRole(RedisRole.MASTER);
    }
    return options;
  }

  @Override
  public String toString() {
    // a Redis URL may carry a password
    return mode.name().toLowerCase(java.util.Locale.ROOT) + " " + String.join(",",
        endpoints.stream().map(url -> url.replaceAll("//[^@/]*@", "//***@")).toList())
        + (masterName == null ? "" : " master " + masterName);
  }
}
