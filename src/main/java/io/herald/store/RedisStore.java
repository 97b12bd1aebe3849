package io.herald.store;

import io.herald.metrics.HeraldMetrics;
import io.herald.vertx.VertxInternals;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The gateway's only way to Redis: calls that time out instead of hanging, failures as
 * {@link StoreException}, {@link Script}s run as functions or by SHA.
 *
 * <p>On one server (or a sentinel set's primary) every call goes to its {@link Server}. On a Redis
 * Cluster each call goes to the primary of its first key's hash slot, with a {@link Server} per
 * primary, so a pipelined store pipelines per shard; a MOVED reply re-reads the slot table and sends
 * the call where it now belongs, an ASK sends it once to the importing primary after ASKING, and
 * TRYAGAIN (a multi-key call during a slot's migration) or CLUSTERDOWN try again shortly: a slot
 * migration costs retries, not errors.
 */
public final class RedisStore {
  /** MOVED and ASK redirections of one call before it fails (503 STORE_UNAVAILABLE). */
  private static final int REDIRECTS = 16;
  /**
   * The first wait before a call refused with TRYAGAIN or CLUSTERDOWN, or whose primary is unknown
   * or unreachable, is tried again; it doubles up to {@link #MAX_RETRY_MS}, and the call is tried
   * until its timeout would pass.
   */
  private static final long RETRY_MS = 25;
  private static final long MAX_RETRY_MS = 400;
  /** How often a cluster's slot table is read again besides when a call finds it wrong. */
  private static final long REFRESH_MS = 5000;
  private final Vertx vertx;
  private final int poolSize;
  private final long timeoutMs;
  private final boolean pipelined;
  /** The one server outside a cluster; null on a cluster. */
  private final Server single;
  /** On a cluster: its slot table, and a server per primary. */
  private final ClusterSlots slots;
  private final Map<String, Server> servers = new ConcurrentHashMap<>();
  /** The primary each connection of {@link #connect()} went to (weak: callers just drop them). */
  private final Map<RedisConnection, String> connected = Collections.synchronizedMap(new WeakHashMap<>());
  private volatile boolean closed;
  private final long refreshTimer;
  private Consumer<String> spoolWatcher = consumer -> {};
  /** Times script calls, when set. */
  private HeraldMetrics metrics;
  /** What a node's stores share (see {@link #sharingScriptsOf}). */
  private Shared shared = new Shared();
  private final ReplicaWait replicaWait;

  private RedisStore(Vertx vertx, RedisTarget target, int poolSize, long timeoutMs, boolean pipelined,
      ReplicaWait replicaWait) {
    this.vertx = vertx;
    this.replicaWait = replicaWait;
    boolean cluster = target.mode() == RedisTarget.Mode.CLUSTER;
    // a pipelined server has its connection, one for confirmed calls when it waits for replicas,
    // and room for a subscription (connect): on a cluster, the store that subscribes reads the
    // slot table on the same server first, and has a second subscription on every primary (connectTo)
    this.poolSize = pipelined ? (replicaWait.waits() ? 3 : 2) + (cluster ? 1 : 0) : poolSize;
    this.timeoutMs = timeoutMs;
    this.pipelined = pipelined;
    this.single = cluster ? null : new Server(vertx, target.options(), this.poolSize, timeoutMs, pipelined, this::startedOver);
    this.slots = cluster ? new ClusterSlots(target.endpoints()) : null;
    // a primary replaced at a new address answers no MOVED to the calls that still go to the old one
    this.refreshTimer = cluster ? vertx.setPeriodic(REFRESH_MS, t -> refreshSlots()) : -1;
  }

  /** A store for one verticle: all its commands pipelined on one connection (per shard). */
  public static RedisStore pipelined(Vertx vertx, RedisTarget target, long timeoutMs) {
    return pipelined(vertx, target, timeoutMs, ReplicaWait.NONE);
  }

  /**
   * As {@link #pipelined(Vertx, RedisTarget, long)}; confirmed scripts ({@link Script#confirmed})
   * answer only once {@code wait.replicas()} replicas took their writes (Redis' WAIT).
   */
  public static RedisStore pipelined(Vertx vertx, RedisTarget target, long timeoutMs, ReplicaWait wait) {
    return new RedisStore(vertx, target, 1, timeoutMs, true, wait);
  }

  /** A pipelined store of one Redis server. */
  public static RedisStore pipelined(Vertx vertx, String url, long timeoutMs) {
    return pipelined(vertx, RedisTarget.standalone(url), timeoutMs);
  }

  /** A store that may be used from any thread: pooled connections. */
  public static RedisStore pooled(Vertx vertx, RedisTarget target, int poolSize, long timeoutMs) {
    return pooled(vertx, target, poolSize, timeoutMs, ReplicaWait.NONE);
  }

  /** As {@link #pooled(Vertx, RedisTarget, int, long)}, confirmed scripts waiting for {@code wait}'s replicas. */
  public static RedisStore pooled(Vertx vertx, RedisTarget target, int poolSize, long timeoutMs, ReplicaWait wait) {
    return new RedisStore(vertx, target, poolSize, timeoutMs, false, wait);
  }

  /**
   * Tells {@code watcher} the consumer of every script call that may have changed its spool, once
   * the call is over, whatever its outcome (a failed call may have happened all the same).
   */
  public RedisStore watchingSpool(Consumer<String> watcher) {
    this.spoolWatcher = watcher;
    return this;
  }

  /** Times every script call in {@code metrics} (by script). */
  public RedisStore measuring(HeraldMetrics metrics) {
    this.metrics = metrics;
    return this;
  }

  /**
   * Learns from {@code loader}'s {@link #loadFunctions()} whether Redis has functions, rather than
   * from a failed call of its own (one "unknown command" per node, not one per verticle), and
   * counts its new clients with {@code loader}'s (see {@link #newClients}).
   */
  public RedisStore sharingScriptsOf(RedisStore loader) {
    this.shared = loader.shared;
    return this;
  }

  /** What the stores of a node share. */
  private static final class Shared {
    /** Set once Redis answered that it has no functions (before 7): scripts go by SHA from then on. */
    volatile boolean noFunctions;
    /** How many times one of them started over on a new client (a failover, a silent socket). */
    final AtomicLong newClients = new AtomicLong();
  }

  /**
   * How many times this store, or one sharing with it, started over on new connections: a change
   * says Redis may be another server now (a failover), whose clock a node's reading is not of.
   */
  public long newClients() {
    return shared.newClients.get();
  }

  private void startedOver() {
    shared.newClients.incrementAndGet();
  }

  /** How long a call may take before it fails, ms. */
  public long timeoutMs() {
    return timeoutMs;
  }

  /** Whether it talks to a Redis Cluster. */
  public boolean isCluster() {
    return single == null;
  }

  /** Sends a command to the server of its first key (any primary for one without keys). */
  public Future<Response> send(Request request) {
    return send(request, ReplicaWait.NONE);
  }

  /** As {@link #send(Request)}, a write whose answer confirms it: it waits for the replicas, as confirmed scripts do. */
  public Future<Response> sendConfirmed(Request request) {
    return send(request, replicaWait);
  }

  private Future<Response> send(Request request, ReplicaWait wait) {
    if (single != null) {
      return onCallerThread(vertx.getOrCreateContext(), single.send(request, wait, false));
    }
    List<byte[]> keys = VertxInternals.keysOf(request);
    return routed(keys.isEmpty() ? null : keys.get(0), (server, asking) -> server.send(request, wait, asking));
  }

  /** A call to one server: {@code asking} when it goes there on an ASK redirection. */
  private interface Call {
    Future<Response> on(Server server, boolean asking);
  }

  /** {@code call} on the server of {@code key}'s slot, following the cluster's redirections. */
  private Future<Response> routed(byte[] key, Call call) {
    Context caller = vertx.getOrCreateContext();
    if (single != null) {
      return onCallerThread(caller, call.on(single, false));
    }
    return onCallerThread(caller, attempt(new Attempt(key == null ? -1 : HashSlots.of(key), call, caller,
        System.nanoTime() + timeoutMs * 1_000_000), null, false, REDIRECTS, RETRY_MS));
  }

  /**
   * {@code result}, completed on the caller's thread: a server's connection answers on the event
   * loop that opened it, which may be another verticle's (a store shared by verticles, a slot table
   * read started elsewhere), and a verticle's handlers must not run on another loop (on a cluster a
   * socket's push batch overtook its {@code subscribed} answer so, its state touched from two
   * threads).
   */
  private static Future<Response> onCallerThread(Context caller, Future<Response> result) {
    Thread thread = Thread.currentThread();
    Promise<Response> answer = Promise.promise();
    result.onComplete(done -> {
      if (Thread.currentThread() == thread) {
        answer.handle(done);
      } else {
        caller.runOnContext(v -> answer.handle(done));
      }
    });
    return answer.future();
  }

  /** One call's route: its slot (-1: any primary), and until when it may be tried again. */
  private record Attempt(int slot, Call call, Context caller, long deadlineNanos) {}

  /**
   * @param endpoint where a redirection sent it, else null: the slot table's primary
   * @param retryMs  the wait before the next try, if it comes to one
   */
  private Future<Response> attempt(Attempt attempt, String endpoint, boolean asking, int redirects, long retryMs) {
    if (closed) {
      return Future.failedFuture(new StoreException("Redis: the store is closed", false, null));
    }
    int slot = attempt.slot();
    String address = endpoint != null ? endpoint : slot < 0 ? slots.keylessPrimary() : slots.primaryOf(slot);
    if (address == null) {
      // no table yet, or a slot no primary serves: read the table, then try again
      return retry(attempt, retryMs, new StoreException("Redis Cluster: no primary serves slot " + slot, false, null), true);
    }
    return attempt.call().on(server(address), asking).onSuccess(answer -> slots.answered(address)).recover(failure -> {
      if (StoreException.unreplicated(failure)) {
        // the primary answered; its replicas are behind
        slots.answered(address);
        return Future.failedFuture(failure);
      }
      String reply = errorReply(failure);
      if (reply.startsWith("MOVED ") || reply.startsWith("ASK ")) {
        String[] parts = reply.split(" ");
        if (redirects == 0 || parts.length < 3) {
          return Future.failedFuture(failure);
        }
        String to = slots.redirection(parts[2], address);
        if (parts[0].equals("MOVED")) {
          slots.moved(Integer.parseInt(parts[1]), to);
          refreshSlots();
        }
        return attempt(attempt, to, parts[0].equals("ASK"), redirects - 1, retryMs);
      }
      if (reply.startsWith("TRYAGAIN") || reply.startsWith("CLUSTERDOWN")) {
        // refused, not run: a migration in progress, or a failover
        return retry(attempt, retryMs, failure, false);
      }
      if (reply.isEmpty() && failure instanceof StoreException store && !store.sent()
          && VertxInternals.isNotConnected(failure)) {
        // not sent: the primary may have failed over, or moved; the table tells
        slots.unreachable(address);
        return retry(attempt, retryMs, failure, true);
      }
      if (reply.isEmpty()) {
        // no answer (the call may have run: never sent again), but the table may be wrong
        slots.suspect(address);
        refreshSlots();
      }
      return Future.failedFuture(failure);
    });
  }

  /**
   * Tries the call again after {@code retryMs} (reading the table first when {@code reread}), on
   * the caller's context, unless that would pass its timeout: then fails with {@code failure}.
   */
  private Future<Response> retry(Attempt attempt, long retryMs, Throwable failure, boolean reread) {
    if (System.nanoTime() + retryMs * 1_000_000 > attempt.deadlineNanos() || closed) {
      return Future.failedFuture(failure);
    }
    Promise<Response> again = Promise.promise();
    Future<Void> read = reread ? refreshSlots() : Future.succeededFuture();
    // a table read another thread started completes on its context: back to the caller's
    read.onComplete(done -> attempt.caller().runOnContext(v -> vertx.setTimer(retryMs, t ->
        attempt(attempt, null, false, REDIRECTS, Math.min(retryMs * 2, MAX_RETRY_MS)).onComplete(again))));
    return again.future();
  }

  /** Reads the slot table again; servers of endpoints it no longer names are closed. */
  private Future<Void> refreshSlots() {
    return slots.refresh(endpoint -> server(endpoint).send(ClusterSlots.slotsRequest(), ReplicaWait.NONE, false))
        .onSuccess(read -> servers.keySet().stream().filter(endpoint -> !slots.names(endpoint)).toList()
            .forEach(gone -> {
              Server server = servers.remove(gone);
              // after a call's timeout: its calls in flight end as they would have
              vertx.setTimer(timeoutMs, t -> server.close());
            }));
  }

  private Server server(String endpoint) {
    return servers.computeIfAbsent(endpoint, address -> new Server(vertx,
        RedisTarget.standalone(address).options(), poolSize, timeoutMs, pipelined, this::startedOver));
  }

  /**
   * Whether Redis serves: the one server answers PING, or on a cluster a primary says
   * {@code cluster_state:ok} (with {@code everyPrimary}: each one that answers does). A shard with
   * nobody serving it stops only the consumers in its slots, and every node alike: were they all
   * taken out of service, every shard would stop. A primary that answers but says otherwise refuses
   * calls with keys ({@code CLUSTERDOWN}), as in the seconds after it started.
   */
  public Future<Void> serving(boolean everyPrimary) {
    if (single != null) {
      return single.send(Request.cmd(Command.PING), ReplicaWait.NONE, false).mapEmpty();
    }
    // every primary: as the table now has them (a cluster just made may have named only some)
    Future<Void> read = everyPrimary || slots.primaries().isEmpty() ? refreshSlots() : Future.succeededFuture();
    return read.compose(ok -> {
      List<String> primaries = slots.primaries();
      if (primaries.isEmpty()) {
        return Future.failedFuture(new StoreException("Redis Cluster: no primary known", false, null));
      }
      List<Future<String>> states = primaries.stream().map(endpoint -> server(endpoint)
          .send(Request.cmd(Command.CLUSTER).arg("INFO"), ReplicaWait.NONE, false)
          .map(info -> info.toString().contains("cluster_state:ok") ? "" : endpoint)).toList();
      if (!everyPrimary) {
        // the first that serves will do: a hung primary must not hold the answer (a probe's timeout)
        return Future.any(states.stream().map(state -> state.compose(endpoint -> endpoint.isEmpty()
            ? Future.<Void>succeededFuture()
            : Future.<Void>failedFuture(new StoreException("Redis Cluster: cluster_state is not ok at " + endpoint,
                false, null)))).toList()).mapEmpty();
      }
      return Future.join(states).transform(ignored -> {
        List<String> answered = states.stream().filter(Future::succeeded).map(Future::result).toList();
        List<String> refusing = answered.stream().filter(endpoint -> !endpoint.isEmpty()).toList();
        if (answered.isEmpty()) {
          return Future.failedFuture(states.get(0).cause());
        }
        return refusing.isEmpty() ? Future.<Void>succeededFuture()
            : Future.failedFuture(new StoreException("Redis Cluster: cluster_state is not ok at " + refusing, false, null));
      });
    });
  }

  /**
   * Runs a script: as a function of {@link Script#LIBRARY} where it is one and Redis has functions,
   * else by SHA. When its server does not know the library or the script (restart, failover, a fresh
   * Redis) it is loaded there, or sent in full.
   */
  public Future<Response> eval(Script script, List<String> keys, List<?> args) {
    long start = System.nanoTime();
    Future<Response> call = routed(Keys.bytes(keys.get(0)), (server, asking) -> evalOn(server, asking, script, keys, args));
    if (script.changesSpool()) {
      call.onComplete(done -> spoolWatcher.accept(Keys.consumerOf(keys.get(0))));
    }
    return timed(script, start, call);
  }

  /**
   * Runs a script that reads the keys of many consumers, given in {@code args}, on the server of
   * {@code key}'s slot: all those keys must be there (see {@link #serverOf}).
   */
  public Future<Response> evalReadingMany(Script script, String key, List<?> args) {
    long start = System.nanoTime();
    return timed(script, start, routed(Keys.bytes(key), (server, asking) -> evalOn(server, asking, script, List.of(), args)));
  }

  /** {@code call}, timed from {@code start} in the metrics when there are any. */
  private Future<Response> timed(Script script, long start, Future<Response> call) {
    if (metrics != null) {
      call.onComplete(done -> metrics.scriptCall(script.name(), System.nanoTime() - start));
    }
    return call;
  }

  /** Reads a cluster's slot table again (nothing on one server), so that {@link #serverOf} is up to date. */
  public Future<Void> readSlots() {
    return single != null ? Future.succeededFuture() : refreshSlots();
  }

  /** Which server holds {@code key} as far as this store knows: on one server (or Sentinel's primary), "". */
  public String serverOf(String key) {
    if (single != null) {
      return "";
    }
    String primary = slots.primaryOf(HashSlots.of(Keys.bytes(key)));
    return primary == null ? "" : primary;
  }

  private Future<Response> evalOn(Server server, boolean asking, Script script, List<String> keys, List<?> args) {
    String function = script.function();
    ReplicaWait wait = script.confirmed() ? replicaWait : ReplicaWait.NONE;
    if (function == null || shared.noFunctions) {
      return evalSha(server, asking, script, keys, args, wait);
    }
    return server.send(scriptRequest(Command.FCALL, function, keys, args), wait, asking).recover(failure -> {
      if (StoreException.unreplicated(failure)) {
        // the script ran: whatever the WAIT's failure says, it must not run again
        return Future.failedFuture(failure);
      }
      if (withoutFunctions(failure)) {
        shared.noFunctions = true;
        return evalSha(server, asking, script, keys, args, wait);
      }
      return replyStarts(failure, "ERR Function not found")
          ? loadLibrary(server).compose(loaded -> server.send(scriptRequest(Command.FCALL, function, keys, args), wait, asking))
          : Future.failedFuture(failure);
    });
  }

  private static Future<Response> evalSha(Server server, boolean asking, Script script, List<String> keys, List<?> args,
      ReplicaWait wait) {
    return server.send(scriptRequest(Command.EVALSHA, script.sha(), keys, args), wait, asking)
        .recover(failure -> replyStarts(failure, "NOSCRIPT")
            ? server.send(scriptRequest(Command.EVAL, script.body(), keys, args), wait, asking)
            : Future.failedFuture(failure));
  }

  /**
   * Loads the function library on every primary that does not hold it already, so that calls find
   * it (a node starting does this; calls load it themselves where Redis lost it). Before Redis 7
   * the scripts are loaded instead, so that a node's first calls by SHA find them.
   */
  public Future<Void> loadFunctions() {
    if (single != null) {
      return loadFunctions(single);
    }
    return refreshSlots().compose(read -> Future.all(slots.primaries().stream()
        .map(endpoint -> loadFunctions(server(endpoint))).toList())).mapEmpty();
  }

  private Future<Void> loadFunctions(Server server) {
    return server.send(Request.cmd(Command.FUNCTION).arg("LIST").arg("LIBRARYNAME").arg(Script.LIBRARY.name()),
            ReplicaWait.NONE, false)
        .compose(listed -> listed.size() > 0 ? Future.<Void>succeededFuture() : loadLibrary(server).<Void>mapEmpty())
        .recover(failure -> {
          if (withoutFunctions(failure)) {
            shared.noFunctions = true;
            return loadScripts(server);
          }
          return Future.failedFuture(failure);
        });
  }

  private static Future<Void> loadScripts(Server server) {
    return Future.all(Script.all().stream().map(script ->
        server.send(Request.cmd(Command.SCRIPT).arg("LOAD").arg(script.body()), ReplicaWait.NONE, false)).toList())
        .mapEmpty();
  }

  /** Redis before 7, or a Redis user not allowed functions: scripts go by SHA. */
  private static boolean withoutFunctions(Throwable failure) {
    return replyStarts(failure, "ERR unknown command") || replyStarts(failure, "NOPERM");
  }

  /**
   * Loads the function library; one that another node loaded meanwhile is as good. A load that
   * failed ran no script: the call it was for was not sent.
   */
  private static Future<Response> loadLibrary(Server server) {
    return server.send(Request.cmd(Command.FUNCTION).arg("LOAD").arg(Script.LIBRARY.code()), ReplicaWait.NONE, false)
        .recover(failure -> replyStarts(failure, "ERR Library '" + Script.LIBRARY.name() + "' already exists")
            ? Future.succeededFuture()
            : Future.failedFuture(new StoreException("Redis: the function library did not load: " + failure.getMessage(),
                false, failure)));
  }

  /**
   * A connection of its own, for SUBSCRIBE; the caller owns it and reconnects when it ends. On a
   * cluster, to any primary: every node hears every PUBLISH of the cluster.
   */
  public Future<RedisConnection> connect() {
    if (single != null) {
      return single.connect();
    }
    String endpoint = slots.keylessPrimary();
    if (endpoint == null) {
      return refreshSlots().compose(read -> connect());
    }
    return server(endpoint).connect()
        .onSuccess(conn -> connected.put(conn, endpoint))
        .onFailure(failure -> slots.suspect(endpoint));
  }

  /** On a cluster, the primaries its slot table names (as last read); on one server, none. */
  public List<String> primaries() {
    return single != null ? List.of() : slots.primaries();
  }

  /** A connection of its own to the primary at {@code endpoint} of a cluster (see {@link #primaries()}). */
  public Future<RedisConnection> connectTo(String endpoint) {
    return server(endpoint).connect();
  }

  /**
   * A connection of {@link #connect()} stopped answering: on a cluster its primary is passed over
   * for keyless commands a while (the next subscription goes to another).
   */
  public void unanswered(RedisConnection connection) {
    String endpoint = connected.remove(connection);
    if (endpoint != null) {
      slots.suspect(endpoint);
    }
  }

  public Future<Void> close() {
    closed = true;
    vertx.cancelTimer(refreshTimer);
    List<Future<Void>> closing = new ArrayList<>();
    if (single != null) {
      closing.add(single.close());
    }
    servers.values().forEach(server -> closing.add(server.close()));
    return Future.join(closing).mapEmpty();
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
    return errorReply(failure).startsWith(prefix);
  }

  /** Redis' error reply that failed the call, or "" for a failure of another kind. */
  private static String errorReply(Throwable failure) {
    Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
    return VertxInternals.isRedisErrorReply(cause) && cause.getMessage() != null ? cause.getMessage() : "";
  }
}
