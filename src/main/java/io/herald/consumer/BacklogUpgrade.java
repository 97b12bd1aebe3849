package io.herald.consumer;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Moves the backlogs that 0.6.0 kept as sorted sets into the backlog lists of this version, as a
 * node starts (before it serves): consumer by consumer, in pieces of {@link #PIECE} events.
 */
public final class BacklogUpgrade {
  /** Events moved per script call: bounds how long one call holds Redis. */
  static final int PIECE = 10_000;

  private BacklogUpgrade() {}

  public static Future<Void> run(RedisStore store, Collection<String> consumers) {
    Future<Void> chain = Future.succeededFuture();
    for (String consumer : consumers) {
      chain = chain.compose(ok -> move(store, consumer));
    }
    return chain;
  }

  private static Future<Void> move(RedisStore store, String consumer) {
    List<String> keys = new ArrayList<>(Keys.consumer(consumer));
    keys.add(Keys.legacyBacklog(consumer));
    return store.eval(Script.BACKLOG_UPGRADE, keys, List.of(PIECE))
        .compose(left -> left.toLong() > 0 ? move(store, consumer) : Future.<Void>succeededFuture());
  }
}
