package io.herald.store;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClientOptions;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.net.ConnectException;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's only way to Redis: a pooled client whose calls time out instead of hanging, whose
 * failures become {@link StoreException}, and which runs {@link Script}s by SHA. The pooled client
 * opens a fresh connection when a broken one is dropped, so a restarted Redis is picked up again.
 */
public final class RedisStore {
  private final Redis client;
  private final long timeoutMs;

  public RedisStore(Vertx vertx, String url, int poolSize, long timeoutMs) {
    RedisOptions options = new RedisOptions()
        .setConnectionString(url)
        .setMaxPoolSize(poolSize)
        .setMaxPoolWaiting(poolSize * 256)
        .setMaxWaitingHandlers(4096)
        .setNetClientOptions(new NetClientOptions()
            .setConnectTimeout((int) Math.min(timeoutMs, Integer.MAX_VALUE))
            .setTcpNoDelay(true)
            .setTcpKeepAlive(true));
    this.client = Redis.createClient(vertx, options);
    this.timeoutMs = timeoutMs;
  }

  public Future<Response> send(Request request) {
    return client.send(request)
        .timeout(timeoutMs, TimeUnit.MILLISECONDS)
        .recover(RedisStore::toStoreFailure);
  }

  /** Runs a script by SHA; when Redis does not know it (restart, failover) it is sent in full. */
  public Future<Response> eval(Script script, List<String> keys, List<?> args) {
    return send(scriptRequest(Command.EVALSHA, script.sha(), keys, args))
        .recover(failure -> isNoScript(failure)
            ? send(scriptRequest(Command.EVAL, script.body(), keys, args))
            : Future.failedFuture(failure));
  }

  /** A connection of its own, for SUBSCRIBE; the caller owns it and reconnects when it ends. */
  public Future<RedisConnection> connect() {
    return client.connect().timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(RedisStore::toStoreFailure);
  }

  public Future<Void> close() {
    return client.close();
  }

  private static Request scriptRequest(Command command, String script, List<String> keys, List<?> args) {
    Request request = Request.cmd(command).arg(script).arg(keys.size());
    for (String key : keys) {
      request.arg(key);
    }
    for (Object arg : args) {
      if (arg instanceof Buffer buffer) {
        request.arg(buffer);
      } else {
        request.arg(String.valueOf(arg));
      }
    }
    return request;
  }

  private static boolean isNoScript(Throwable failure) {
    Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
    return cause.getMessage() != null && cause.getMessage().startsWith("NOSCRIPT");
  }

  private static <T> Future<T> toStoreFailure(Throwable failure) {
    if (failure instanceof StoreException) {
      return Future.failedFuture(failure);
    }
    if (isRedisReply(failure)) {
      // Redis answered with an error: the command ran (or was refused) there
      return Future.failedFuture(new StoreException(failure.getMessage(), true, failure));
    }
    boolean sent = !(hasCause(failure, ConnectException.class) || isConnectionRefusedByPool(failure));
    return Future.failedFuture(new StoreException("Redis: " + failure.getMessage(), sent, failure));
  }

  private static boolean isRedisReply(Throwable failure) {
    return failure.getClass().getName().equals("io.vertx.redis.client.impl.types.ErrorType");
  }

  private static boolean isConnectionRefusedByPool(Throwable failure) {
    String message = String.valueOf(failure.getMessage());
    return message.contains("Connection refused") || message.contains("Cannot connect");
  }

  private static boolean hasCause(Throwable failure, Class<? extends Throwable> type) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }
}
