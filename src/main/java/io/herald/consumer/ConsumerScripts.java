package io.herald.consumer;

import io.herald.protocol.ApiException;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.store.StoreException;
import io.vertx.core.Future;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Runs a per-consumer script the way every caller needs it: store failures become the protocol's
 * errors, and the script's answer -1 (the consumer does not exist, deleted meanwhile) becomes 404.
 */
public final class ConsumerScripts {
  private static final System.Logger LOG = System.getLogger(ConsumerScripts.class.getName());

  private ConsumerScripts() {}

  /** @param writes whether the script may change state (a lost answer is then OUTCOME_UNKNOWN) */
  public static Future<Response> run(RedisStore store, Script script, String consumer, List<String> keys,
      List<?> args, boolean writes) {
    return answer(store.eval(script, keys, args), consumer, writes);
  }

  /**
   * Runs a script that writes, as {@link #run}; {@code done} gets its reply first, also when the
   * call failed only because too few replicas confirmed its writes ({@code redis.waitReplicas}): the
   * primary did them, so what they made due must be followed up (filed with the scheduler) though
   * the caller is answered 503.
   */
  public static Future<Response> runWriting(RedisStore store, Script script, String consumer, List<String> keys,
      List<?> args, Consumer<Response> done) {
    Future<Response> call = store.eval(script, keys, args);
    call.onComplete(result -> {
      Optional<Response> reply = result.succeeded() ? Optional.ofNullable(result.result()) : StoreException.written(result.cause());
      reply.filter(written -> written.type() == ResponseType.MULTI).ifPresent(written -> {
        try {
          done.accept(written);
        } catch (RuntimeException e) {
          // a follow-up must not keep the caller from its answer
          LOG.log(System.Logger.Level.ERROR, "Follow-up of " + script + " failed", e);
        }
      });
    });
    return answer(call, consumer, true);
  }

  private static Future<Response> answer(Future<Response> call, String consumer, boolean writes) {
    return call
        .recover(failure -> Future.failedFuture(ApiException.from(failure, writes)))
        .compose(reply -> unknownConsumer(reply)
            ? Future.failedFuture(ApiException.unknownConsumer(consumer))
            : Future.succeededFuture(reply));
  }

  private static boolean unknownConsumer(Response reply) {
    return reply != null && reply.type() == ResponseType.NUMBER && reply.toLong() == -1;
  }
}
