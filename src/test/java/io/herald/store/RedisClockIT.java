package io.herald.store;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.RedisCli;
import io.herald.testing.TestRedis;
import io.vertx.core.Vertx;
import java.time.Duration;
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

  @Test
  @DisplayName("a reading over a second old is read again in the background, the readings going on meanwhile")
  void refreshesInTheBackground() {
    Vertx vertx = Vertx.vertx();
    try (TestRedis redis = TestRedis.start()) {
      RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
      RedisClock clock = new RedisClock();
      clock.now(store).await();
      long timesAfterFirst = RedisCli.calls(redis.url(), "time");
      await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).until(() -> {
        clock.now(store).await();
        return RedisCli.calls(redis.url(), "time") > timesAfterFirst;
      });
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }

  @Test
  @DisplayName("once the store started over on new connections (a failover: maybe another server), the next reading is Redis' again at once")
  void readsAgainAfterTheStoreStartedOver() {
    Vertx vertx = Vertx.vertx();
    try (TestRedis redis = TestRedis.start()) {
      RedisStore store = RedisStore.pipelined(vertx, redis.url(), 300);
      RedisClock clock = new RedisClock();
      clock.now(store).await();
      // a call that times out makes the store start over on a new connection
      redis.pause();
      try {
        store.send(io.vertx.redis.client.Request.cmd(io.vertx.redis.client.Command.PING)).await();
      } catch (RuntimeException expected) {
        // timed out: Redis answers nothing while paused
      } finally {
        redis.resume();
      }
      long timesBefore = RedisCli.calls(redis.url(), "time");
      clock.now(store).await();
      assertEquals(1, RedisCli.calls(redis.url(), "time") - timesBefore, "read from Redis, not carried forward");
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
