package io.herald.store;

import io.herald.vertx.VertxInternals;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetClientOptions;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The gateway's only way to Redis: calls that time out instead of hanging, failures as
 * {@link StoreException}, {@link Script}s run by SHA.
 *
 * <p>A store made {@link #pipelined} sends every command of its owner (one verticle, one event
 * loop) on one connection, without waiting for earlier answers: leasing a pooled connection per
 * command costs about as much CPU as the command itself. A connection that fails or closes is
 * dropped and the next command opens a new one, so a restarted Redis is picked up again. Other
 * stores (used from several threads) lease pooled connections per command.
 */
public final class RedisStore {
  private final Vertx vertx;
  private final RedisOptions options;
  /** Replaced whole when its connections reach the wrong server (see {@link #replace}). */
  private final AtomicReference<Redis> client = new AtomicReference<>();
  private volatile boolean closed;
  private final long timeoutMs;
  private final boolean pipelined;
  private Future<RedisConnection> connection;
  private Consumer<String> spoolWatcher = consumer -> {};
  /** Set once Redis answered that it has no functions (before 7): scripts go by SHA from then on. */
  private volatile boolean noFunctions;
  private ReplicaWait replicaWait = ReplicaWait.NONE;
  /** The WAIT that the confirmed calls sent in this event-loop task share, and its connection. */
  private Future<Response> sharedWait;
  private Future<RedisConnection> sharedWaitOn;

  private RedisStore(Vertx vertx, RedisTarget target, int poolSize, long timeoutMs, boolean pipelined) {
    RedisOptions options = target.options()
        .setMaxPoolSize(poolSize)
        .setMaxPoolWaiting(poolSize * 256)
        .setMaxWaitingHandlers(4096)
        .setNetClientOptions(new NetClientOptions()
            .setConnectTimeout((int) Math.min(timeoutMs, Integer.MAX_VALUE))
            .setTcpNoDelay(true)
            .setTcpKeepAlive(true));
    this.vertx = vertx;
    this.options = options;
    this.client.set(Redis.createClient(vertx, options));
    this.timeoutMs = timeoutMs;
    this.pipelined = pipelined;
  }

  /** A store for one verticle: all its commands pipelined on one connection. */
  public static RedisStore pipelined(Vertx vertx, RedisTarget target, long timeoutMs) {
    return new RedisStore(vertx, target, 1, timeoutMs, true);
  }

  /** A pipelined store of one Redis server. */
  public static RedisStore pipelined(Vertx vertx, String url, long timeoutMs) {
    return pipelined(vertx, RedisTarget.standalone(url), timeoutMs);
  }

  /** A store that may be used from any thread: pooled connections. */
  public static RedisStore pooled(Vertx vertx, RedisTarget target, int poolSize, long timeoutMs) {
    return new RedisStore(vertx, target, poolSize, timeoutMs, false);
  }

  /**
   * Tells {@code watcher} the consumer of every script call that may have changed its spool, once
   * the call is over, whatever its outcome (a failed call may have happened all the same).
   */
  public RedisStore watchingSpool(Consumer<String> watcher) {
    this.spoolWatcher = watcher;
    return this;
  }

  /**
   * Confirmed scripts ({@link Script#confirmed}) answer only once {@code wait.replicas()} replicas
   * took their writes (Redis' WAIT, on the connection that sent them).
   */
  public RedisStore waitingForReplicas(ReplicaWait wait) {
    this.replicaWait = wait;
    return this;
  }

  public Future<Response> send(Request request) {
    return send(request, false);
  }

  /** @param confirmed whether its answer waits for {@link #replicaWait}'s replicas */
  private Future<Response> send(Request request, boolean confirmed) {
    boolean waits = confirmed && replicaWait.waits();
    if (!pipelined) {
      Redis used = client.get();
      Future<Response> call = !waits ? used.send(request)
          : used.connect().compose(c -> replicated(c.send(request), c.send(waitRequest())).eventually(c::close));
      return call.timeout(timeoutMs, TimeUnit.MILLISECONDS)
          .onFailure(failure -> {
            if (demoted(failure)) {
              replace(used);
            }
          })
          .recover(RedisStore::toStoreFailure);
    }
    Future<RedisConnection> used = connection();
    Future<Response> call = used.compose(c -> c.send(request));
    return (waits ? replicated(call, sharedWait(used)) : call)
        .timeout(timeoutMs, TimeUnit.MILLISECONDS)
        .onFailure(failure -> {
          // a Redis that stopped answering may never close the socket: start over on a new one;
          // so with one that became a replica (a failover): the next connect finds the primary
          if ((failure instanceof TimeoutException || demoted(failure)) && used.succeeded()) {
            drop(used);
          }
        })
        .recover(RedisStore::toStoreFailure);
  }

  /**
   * The WAIT for the confirmed calls sent on {@code used} in this event-loop task: one, sent after
   * them all (a publish round's spool scripts, a burst of acks), for it covers every write sent
   * before it on its connection.
   */
  private Future<Response> sharedWait(Future<RedisConnection> used) {
    if (sharedWait == null || sharedWaitOn != used) {
      Promise<Response> wait = Promise.promise();
      sharedWait = wait.future();
      sharedWaitOn = used;
      vertx.getOrCreateContext().runOnContext(v -> {
        if (sharedWait == wait.future()) {
          sharedWait = null;
          sharedWaitOn = null;
        }
        used.compose(c -> c.send(waitRequest())).onComplete(wait);
      });
    }
    return sharedWait;
  }

  private Request waitRequest() {
    return Request.cmd(Command.WAIT).arg(replicaWait.replicas()).arg(replicaWait.timeoutMs());
  }

  /**
   * The call's reply once the WAIT sent after it saw enough replicas; a shortfall fails it as an
   * outcome unknown: the primary has the writes, a failover may lose them.
   */
  private Future<Response> replicated(Future<Response> call, Future<Response> wait) {
    return call.compose(reply -> wait.compose(acked -> acked.toInteger() >= replicaWait.replicas()
        ? Future.succeededFuture(reply)
        : Future.failedFuture(StoreException.unreplicated(acked.toInteger(), replicaWait))));
  }

  /**
   * Redis refused a write because it is no primary (any more), or a primary cut off from its
   * replicas (min-replicas-to-write): the next connection should find the primary anew. A
   * sentinel's failover closes the demoted primary's client connections itself, but a connection
   * opened to it before the sentinels reconfigured it stays open. Redis before 7 wraps a script's
   * refusal in its script error, hence the search inside the message.
   */
  private static boolean demoted(Throwable failure) {
    Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
    String message = String.valueOf(cause.getMessage());
    return message.startsWith("READONLY") || message.contains("-READONLY ") || message.startsWith("NOREPLICAS");
  }

  /**
   * Puts a new client in the place of {@code used} (once, whoever else saw it fail too), and closes
   * {@code used} only after a call's timeout, so that its commands in flight end as they would
   * have instead of failing with its sockets.
   */
  private void replace(Redis used) {
    Redis fresh = Redis.createClient(vertx, options);
    if (closed || !client.compareAndSet(used, fresh)) {
      fresh.close();
      return;
    }
    vertx.setTimer(timeoutMs, t -> used.close());
  }

  private Future<RedisConnection> connection() {
    if (connection == null || connection.failed()) {
      Future<RedisConnection> opening = client.get().connect();
      connection = opening;
      opening.onSuccess(c -> {
        c.exceptionHandler(failure -> drop(opening));
        c.endHandler(ended -> drop(opening));
      });
    }
    return connection;
  }

  /**
   * Forgets a broken connection. Closing a connection of a pooled client only returns it to the
   * pool, from which the next connect would take it again; so the whole client goes, and with it
   * the socket.
   */
  private void drop(Future<RedisConnection> broken) {
    if (connection == broken) {
      connection = null;
      replace(client.get());
    }
  }

  /**
   * Runs a script: as a function of {@link Script#LIBRARY} where it is one and Redis has functions,
   * else by SHA. When Redis does not know the library or the script (restart, failover, a fresh
   * Redis) it is loaded, or sent in full.
   */
  public Future<Response> eval(Script script, List<String> keys, List<?> args) {
    String function = script.function();
    Future<Response> call = function == null || noFunctions ? evalSha(script, keys, args)
        : send(scriptRequest(Command.FCALL, function, keys, args), script.confirmed()).recover(failure -> {
          if (withoutFunctions(failure)) {
            noFunctions = true;
            return evalSha(script, keys, args);
          }
          return replyStarts(failure, "ERR Function not found")
              ? loadLibrary().compose(loaded -> send(scriptRequest(Command.FCALL, function, keys, args), script.confirmed()))
              : Future.failedFuture(failure);
        });
    if (script.changesSpool()) {
      call.onComplete(done -> spoolWatcher.accept(Keys.consumerOf(keys.get(0))));
    }
    return call;
  }

  private Future<Response> evalSha(Script script, List<String> keys, List<?> args) {
    return send(scriptRequest(Command.EVALSHA, script.sha(), keys, args), script.confirmed())
        .recover(failure -> replyStarts(failure, "NOSCRIPT")
            ? send(scriptRequest(Command.EVAL, script.body(), keys, args), script.confirmed())
            : Future.failedFuture(failure));
  }

  /**
   * Loads the function library unless Redis holds it already, so that calls find it (a node
   * starting does this; calls load it themselves when Redis lost it). Before Redis 7 there is
   * nothing to load: scripts go by SHA.
   */
  public Future<Void> loadFunctions() {
    return send(Request.cmd(Command.FUNCTION).arg("LIST").arg("LIBRARYNAME").arg(Script.LIBRARY.name()))
        .compose(listed -> listed.size() > 0 ? Future.<Void>succeededFuture() : loadLibrary().<Void>mapEmpty())
        .recover(failure -> {
          if (withoutFunctions(failure)) {
            noFunctions = true;
            return Future.succeededFuture();
          }
          return Future.failedFuture(failure);
        });
  }

  /** Redis before 7, or a Redis user not allowed functions: scripts go by SHA. */
  private static boolean withoutFunctions(Throwable failure) {
    return replyStarts(failure, "ERR unknown command") || replyStarts(failure, "NOPERM");
  }

  /**
   * Loads the function library; one that another node loaded meanwhile is as good. A load that
   * failed ran no script: the call it was for was not sent.
   */
  private Future<Response> loadLibrary() {
    return send(Request.cmd(Command.FUNCTION).arg("LOAD").arg(Script.LIBRARY.code()))
        .recover(failure -> replyStarts(failure, "ERR Library '" + Script.LIBRARY.name() + "' already exists")
            ? Future.succeededFuture()
            : Future.failedFuture(new StoreException("Redis: the function library did not load: " + failure.getMessage(),
                false, failure)));
  }

  /** A connection of its own, for SUBSCRIBE; the caller owns it and reconnects when it ends. */
  public Future<RedisConnection> connect() {
    return client.get().connect().timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(RedisStore::toStoreFailure);
  }

  public Future<Void> close() {
    if (connection != null && connection.succeeded()) {
      connection.result().close();
    }
    closed = true;
    return client.get().close();
  }

  /**
   * The call as one array of its arguments (a request built argument by argument grows its list
   * again and again), the keys as bytes made once (see {@link Keys#bytes}).
   */
  private static Request scriptRequest(Command command, String script, List<String> keys, List<?> args) {
    Object[] parts = new Object[2 + keys.size() + args.size()];
    parts[0] = script;
    parts[1] = keys.size();
    int at = 2;
    for (String key : keys) {
      parts[at++] = Keys.bytes(key);
    }
    for (Object arg : args) {
      parts[at++] = arg instanceof Buffer ? arg : String.valueOf(arg);
    }
    return Request.cmd(command, parts);
  }

  /** Whether the failure is Redis' error reply starting with {@code prefix}. */
  private static boolean replyStarts(Throwable failure, String prefix) {
    Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
    return cause.getMessage() != null && cause.getMessage().startsWith(prefix);
  }

  private static <T> Future<T> toStoreFailure(Throwable failure) {
    if (failure instanceof StoreException) {
      return Future.failedFuture(failure);
    }
    if (VertxInternals.isRedisErrorReply(failure)) {
      // Redis refused the command for a state of its own (loading its data after a restart, out of
      // memory, a replica, busy): nothing was done, try again later. Any other error reply is a
      // command or script that failed inside Redis.
      String message = String.valueOf(failure.getMessage());
      // (a script refused by a replica, before Redis 7, reports it inside its error: it wrote nothing)
      boolean refused = REFUSALS.stream().anyMatch(message::startsWith) || message.contains("-READONLY ");
      return Future.failedFuture(new StoreException("Redis: " + message, !refused, !refused, failure));
    }
    boolean sent = !VertxInternals.isNotConnected(failure);
    return Future.failedFuture(new StoreException("Redis: " + failure.getMessage(), sent, failure));
  }

  /** Error replies by which Redis refuses a command without running it. */
  private static final List<String> REFUSALS = List.of("LOADING", "BUSY", "OOM", "READONLY", "MASTERDOWN",
      "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF");

}
