package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.testing.RedisCli;
import io.herald.testing.TestRedis;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.net.URI;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A primary demoted under a store's open connections (REPLICAOF keeps them, as a primary the
 * sentinels reconfigured after a node reconnected to it would): its writes are refused (503, not
 * sent) and the store opens new connections, which in sentinel mode ask the sentinels again.
 */
@Timeout(60)
class DemotedPrimaryIT {

  @Test
  @DisplayName("pipelined and pooled stores answer a READONLY write as refused, and the next command goes on a new connection")
  void demotedPrimaryIsLeft() {
    Vertx vertx = Vertx.vertx();
    List<Function<String, RedisStore>> kinds = List.of(
        url -> RedisStore.pipelined(vertx, url, 1000),
        url -> RedisStore.pooled(vertx, RedisTarget.standalone(url), 1, 1000));
    try {
      for (Function<String, RedisStore> kind : kinds) {
        try (TestRedis primary = TestRedis.start(); TestRedis other = TestRedis.start()) {
          RedisStore store = kind.apply(primary.url());
          long before = clientId(store);
          assertEquals(before, clientId(store), "one connection while nothing fails");
          RedisCli.send(primary.url(), Request.cmd(Command.REPLICAOF).arg("127.0.0.1")
              .arg(URI.create(other.url()).getPort()));
          StoreException refused = assertThrows(StoreException.class,
              () -> store.send(Request.cmd(Command.SET).arg("k").arg("v")).await());
          assertFalse(refused.sent(), "a write a replica refused was not done: " + refused.getMessage());
          assertNotEquals(before, clientId(store), "still on the connection that reached the demoted primary");
          store.close().await();
        }
      }
    } finally {
      vertx.close().await();
    }
  }

  private static long clientId(RedisStore store) {
    return store.send(Request.cmd(Command.CLIENT).arg("ID")).await().toLong();
  }
}
