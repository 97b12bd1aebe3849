package io.herald.consumer;

import io.herald.protocol.ApiException;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.List;

/**
 * Runs a per-consumer script the way every caller needs it: store failures become the protocol's
 * errors, and the script's answer -1 (the consumer does not exist, deleted meanwhile) becomes 404.
 */
public final class ConsumerScripts {
  private ConsumerScripts() {}

  /** @param writes whether the script may change state (a lost answer is then OUTCOME_UNKNOWN) */
  public static Future<Response> run(RedisStore store, Script script, String consumer, List<String> keys,
      List<?> args, boolean writes) {
    return store.eval(script, keys, args)
        .recover(failure -> Future.failedFuture(ApiException.from(failure, writes)))
        .compose(reply -> reply.type() == ResponseType.NUMBER && reply.toLong() == -1
            ? Future.failedFuture(ApiException.unknownConsumer(consumer))
            : Future.succeededFuture(reply));
  }
}
