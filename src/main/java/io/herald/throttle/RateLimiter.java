package io.herald.throttle;

import io.herald.consumer.ConsumerScripts;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;

/**
 * The rate limit for requests that hand nothing out themselves (polls are counted by the poll
 * script, in the same step). The limit and the block live in Redis, so they hold across nodes.
 */
public final class RateLimiter {
  private static final SecureRandom RANDOM = new SecureRandom();

  private final RedisStore store;

  public RateLimiter(RedisStore store) {
    this.store = store;
  }

  /** Counts a poll request that is not a poll (a WebSocket subscribe); fails with 429 when refused. */
  public Future<Void> admit(ConsumerSettings consumer) {
    byte[] id = new byte[12];
    RANDOM.nextBytes(id);
    return ask(consumer, HexFormat.of().formatHex(id));
  }

  /** Fails with 429 while the consumer is blocked (a WebSocket upgrade); counts nothing. */
  public Future<Void> checkNotBlocked(ConsumerSettings consumer) {
    return ask(consumer, "");
  }

  private Future<Void> ask(ConsumerSettings consumer, String requestId) {
    return ConsumerScripts.run(store, Script.ADMIT, consumer.name(), Keys.consumer(consumer.name()),
            List.of(requestId), !requestId.isEmpty())
        .compose(reply -> reply.toLong() == 0 ? Future.succeededFuture()
            : Future.failedFuture(ApiException.tooManyRequests(reply.toLong())));
  }
}
