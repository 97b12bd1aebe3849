package io.herald.redelivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.testing.RedisCli;
import io.herald.testing.TestRedis;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class DueTimesIT {

  private static long scriptCalls(String url) {
    return RedisCli.calls(url, "evalsha") - RedisCli.failedCalls(url, "evalsha") + RedisCli.calls(url, "eval");
  }

  @Test
  @DisplayName("filings made together go to Redis in one call, each consumer's earliest")
  void filingsGatherIntoOneCall() {
    Vertx vertx = Vertx.vertx();
    try (TestRedis redis = TestRedis.start()) {
      RedisStore store = RedisStore.pipelined(vertx, redis.url(), 5000);
      DueTimes dueTimes = new DueTimes(vertx, store);
      long before = scriptCalls(redis.url());
      vertx.runOnContext(v -> {
        for (int i = 0; i < 10; i++) {
          dueTimes.file("c" + i, 5_000_000 + i);
          dueTimes.file("c" + i, 4_000_000 + i);
        }
      });
      await().atMost(Duration.ofSeconds(5)).until(() ->
          RedisCli.send(redis.url(), Request.cmd(Command.ZCARD).arg(Keys.DUE)).toInteger() == 10);
      for (int i = 0; i < 10; i++) {
        assertEquals(4_000_000 + i, RedisCli.send(redis.url(), Request.cmd(Command.ZSCORE).arg(Keys.DUE).arg("c" + i)).toLong());
      }
      assertEquals(1, scriptCalls(redis.url()) - before);
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
