package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.RedisCli;
import io.herald.testing.TestRedis;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class RedisClockIT {

  @Test
  @DisplayName("the node's reading of Redis' clock agrees with TIME, and asks Redis once for a thousand readings")
  void readsRedisTimeOnce() {
    Vertx vertx = Vertx.vertx();
    try (TestRedis redis = TestRedis.start()) {
      RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
      RedisClock clock = new RedisClock();
      long timesBefore = RedisCli.calls(redis.url(), "time");
      long before = RedisCli.millis(redis.url());
      long first = clock.now(store).await();
      long last = first;
      for (int i = 0; i < 1000; i++) {
        long now = clock.now(store).await();
        assertTrue(now >= last, "never goes back");
        last = now;
      }
      long after = RedisCli.millis(redis.url());
      // the two RedisCli.millis calls are TIMEs too
      assertEquals(3, RedisCli.calls(redis.url(), "time") - timesBefore);
      assertTrue(first >= before - 1 && last <= after + 1, before + " <= " + first + " <= " + last + " <= " + after);
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
