package io.herald.store;

import io.herald.vertx.VertxInternals;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.RedisOptions;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The connections of a store to one Redis server (or to the primary a sentinel set names): calls
 * that time out instead of hanging, failures as {@link StoreException}.
 *
 * <p>A pipelined server sends every command of its owner (one verticle, one event loop) on one
 * connection, without waiting for earlier answers: leasing a pooled connection per command costs
 * about as much CPU as the command itself. A connection that fails or closes is dropped and the
 * next command opens a new one, so a restarted Redis is picked up again. Other servers (used from
 * several threads) lease pooled connections per command.
 */
final class Server {
  private static final Request ASKING = Request.cmd(Command.ASKING);
  private final Vertx vertx;
  private final RedisOptions options;
  /** Replaced whole when its connections reach the wrong server (see {@link #replace}). */
  private final AtomicReference<Redis> client = new AtomicReference<>();
  private volatile boolean closed;
  private final long timeoutMs;
  private final boolean pipelined;
  private Future<RedisConnection> connection;
  /**
   * Confirmed calls and their WAITs go on a connection of their own: a WAIT holds its connection
   * until the replicas answer, and polls and reads must not queue behind it.
   */
  private Future<RedisConnection> confirmedConnection;
  /** The WAIT sent and not answered yet, on {@link #waitsOn}; at most one at a time. */
  private Future<Response> waitInFlight;
  /** The WAIT that the confirmed calls sent since the one in flight share, sent once it answers. */
  private Promise<Response> nextWait;
  private Future<RedisConnection> waitsOn;
  /** Told whenever a new client takes the place of the old (see {@link #replace}). */
  private final Runnable startedOver;

  /**
   * @param poolSize connections of a pooled server; a pipelined one opens one, a second when it
   *                 waits for replicas (see {@link #confirmedConnection}), and a subscription's
   * @param startedOver told whenever a new client takes the old one's place
   */
  Server(Vertx vertx, RedisOptions reach, int poolSize, long timeoutMs, boolean pipelined, Runnable startedOver) {
    this.vertx = vertx;
    this.startedOver = startedOver;
    this.options = reach
        .setMaxPoolSize(poolSize)
        .setMaxPoolWaiting(poolSize * 256)
        .setMaxWaitingHandlers(4096)
        .setNetClientOptions(new NetClientOptions()
            // well within a call's timeout: a refused or unreachable server is told as such (nothing
            // sent), so that a cluster's table is read again, not a timeout (the call may have run)
            .setConnectTimeout((int) Math.max(50, Math.min(timeoutMs / 2, Integer.MAX_VALUE)))
            .setTcpNoDelay(true)
            .setTcpKeepAlive(true));
    this.client.set(Redis.createClient(vertx, options));
    this.timeoutMs = timeoutMs;
    this.pipelined = pipelined;
  }

  /**
   * Sends {@code request}; with {@code wait} replicas to wait for (a confirmed call), answers only
   * once Redis' WAIT, sent after it on the same connection, saw them take its writes. With
   * {@code asking}, ASKING goes just before it on its connection (a slot being imported).
   */
  Future<Response> send(Request request, ReplicaWait wait, boolean asking) {
    boolean waits = wait.waits();
    if (!pipelined) {
      Redis used = client.get();
      Future<Response> call = !waits && !asking ? used.send(request) : used.connect().compose(c -> {
        Future<Response> reply = sendOn(c, request, asking);
        if (!waits) {
          return reply.eventually(c::close);
        }
        Future<Response> waited = sendWait(c, wait, request);
        // back to the pool only once the WAIT answered: it holds the connection until then
        Future.join(reply, waited).onComplete(done -> c.close());
        return replicated(reply, waited, wait);
      });
      return call.timeout(timeoutMs, TimeUnit.MILLISECONDS)
          .onFailure(failure -> {
            // as below: a pooled socket gone silent would time out every call that leases it
            if (failure instanceof TimeoutException || demoted(failure)) {
              replace(used);
            }
          })
          .recover(Server::toStoreFailure);
    }
    Future<RedisConnection> used = waits ? confirmedConnection() : connection();
    Future<Response> call = used.compose(c -> sendOn(c, request, asking));
    return (waits ? replicated(call, sharedWait(used, wait, request), wait) : call)
        .timeout(timeoutMs, TimeUnit.MILLISECONDS)
        .onFailure(failure -> {
          // a Redis that stopped answering may never close the socket: start over on a new one;
          // so with one that became a replica (a failover): the next connect finds the primary
          if ((failure instanceof TimeoutException || demoted(failure)) && used.succeeded()) {
            drop(used);
          }
        })
        .recover(Server::toStoreFailure);
  }

  /** Sends {@code request} on {@code connection}, just after ASKING when {@code asking}. */
  private static Future<Response> sendOn(RedisConnection connection, Request request, boolean asking) {
    if (asking) {
      connection.send(ASKING);
    }
    return connection.send(request);
  }

  /**
   * The WAIT that covers a confirmed call just sent on {@code used}: the next one sent there. One
   * WAIT at a time: the calls sent while one is in flight share the next, sent when it answers (so
   * a replica that does not answer holds each batch of calls once, not once per call).
   */
  private Future<Response> sharedWait(Future<RedisConnection> used, ReplicaWait wait, Request request) {
    if (waitsOn != used) {
      waitsOn = used;
      waitInFlight = null;
      nextWait = null;
    }
    if (nextWait == null) {
      Promise<Response> next = Promise.promise();
      nextWait = next;
      Future<Response> before = waitInFlight;
      if (before == null || before.isComplete()) {
        // after this event-loop task: the calls it sends too share this WAIT
        vertx.getOrCreateContext().runOnContext(v -> sendShared(used, next, wait, request));
      } else {
        before.onComplete(done -> sendShared(used, next, wait, request));
      }
    }
    return nextWait.future();
  }

  private void sendShared(Future<RedisConnection> used, Promise<Response> next, ReplicaWait wait, Request request) {
    if (waitsOn == used) {
      nextWait = nextWait == next ? null : nextWait;
      waitInFlight = next.future();
    }
    used.compose(c -> sendWait(c, wait, request)).onComplete(next);
  }

  /**
   * WAIT covers what its connection wrote up to then; a write just before it (a key of its own in
   * the slot of the call's first key, so that a cluster primary takes it) makes it cover every
   * write the server took before, other connections' included: a call that found its work done
   * already (an ack answered ALREADY_ACKED) is then confirmed only once that work is on replicas.
   */
  private static Future<Response> sendWait(RedisConnection connection, ReplicaWait wait, Request request) {
    connection.send(Request.cmd(Command.SET).arg(waitKey(request)).arg("1").arg("PX").arg(60_000));
    return connection.send(Request.cmd(Command.WAIT).arg(wait.replicas()).arg(wait.timeoutMs()));
  }

  /** {@code herald:{<hash tag of the call's first key, or the key>}:wait}: in the call's slot. */
  private static byte[] waitKey(Request request) {
    List<byte[]> keys = VertxInternals.keysOf(request);
    String tag = keys.isEmpty() ? "wait" : new String(HashSlots.tagOf(keys.get(0)), StandardCharsets.UTF_8);
    return ("herald:{" + tag + "}:wait").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The call's reply once the WAIT sent after it saw enough replicas; a shortfall, or a WAIT that
   * failed, fails it as an outcome unknown: the primary has the writes, a failover may lose them.
   */
  private static Future<Response> replicated(Future<Response> call, Future<Response> waited, ReplicaWait wait) {
    return call.compose(reply -> waited.transform(done -> {
      if (done.failed()) {
        return Future.failedFuture(StoreException.unreplicated(reply, done.cause()));
      }
      return done.result().toInteger() >= wait.replicas()
          ? Future.succeededFuture(reply)
          : Future.failedFuture(StoreException.unreplicated(reply, done.result().toInteger(), wait));
    }));
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
    return message.startsWith("READONLY") || message.contains("-READONLY ") || message.startsWith("NOREPLICAS")
        // a WAIT on a primary that became a replica
        || message.startsWith("UNBLOCKED") || message.contains("cannot be used with replica");
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
    startedOver.run();
    vertx.setTimer(timeoutMs, t -> used.close());
  }

  private Future<RedisConnection> connection() {
    if (connection == null || connection.failed()) {
      connection = open();
    }
    return connection;
  }

  private Future<RedisConnection> confirmedConnection() {
    if (confirmedConnection == null || confirmedConnection.failed()) {
      confirmedConnection = open();
    }
    return confirmedConnection;
  }

  private Future<RedisConnection> open() {
    Future<RedisConnection> opening = client.get().connect();
    opening.onSuccess(c -> {
      c.exceptionHandler(failure -> drop(opening));
      c.endHandler(ended -> drop(opening));
    });
    return opening;
  }

  /**
   * Forgets a broken connection. Closing a connection of a pooled client only returns it to the
   * pool, from which the next connect would take it again; so the whole client goes, and with it
   * the sockets (the other connection's too: the next command opens it anew).
   */
  private void drop(Future<RedisConnection> broken) {
    if (connection == broken || confirmedConnection == broken) {
      connection = null;
      confirmedConnection = null;
      replace(client.get());
    }
  }

  /** A connection of its own, for SUBSCRIBE; the caller owns it and reconnects when it ends. */
  Future<RedisConnection> connect() {
    Future<RedisConnection> connecting = client.get().connect();
    return connecting.timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(failure -> {
      // one that connects after its time was up is nobody's: its place in the pool goes back
      connecting.onSuccess(RedisConnection::close);
      return toStoreFailure(failure);
    });
  }

  Future<Void> close() {
    for (Future<RedisConnection> open : Arrays.asList(connection, confirmedConnection)) {
      if (open != null && open.succeeded()) {
        open.result().close();
      }
    }
    closed = true;
    return client.get().close();
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
      // (a script refused by a replica, before Redis 7, reports it inside its error: it wrote nothing;
      // so does one refused at its first write for want of memory, which Redis allows only first)
      boolean refused = REFUSALS.stream().anyMatch(message::startsWith) || message.contains("-READONLY ")
          || message.contains("-OOM ");
      return Future.failedFuture(new StoreException("Redis: " + message, !refused, !refused, failure));
    }
    boolean sent = !VertxInternals.isNotConnected(failure);
    return Future.failedFuture(new StoreException("Redis: " + failure.getMessage(), sent, failure));
  }

  /** Error replies by which Redis refuses a command without running it (a redirection included). */
  private static final List<String> REFUSALS = List.of("LOADING", "BUSY", "OOM", "READONLY", "MASTERDOWN",
      "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "MISCONF", "MOVED", "ASK");
}
