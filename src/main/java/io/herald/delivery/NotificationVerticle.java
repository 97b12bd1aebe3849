package io.herald.delivery;

import io.herald.Addresses;
import io.herald.consumer.ConsumerDirectory;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.topic.TopicDirectory;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Carries Redis pub/sub into this node: wake-ups for its parked polls (events published, acked or
 * due on any node) go over the event bus to the verticle instance of the poll, rate-limit blocks
 * to every instance (for their sockets), settings changes reload the consumer or topic directory.
 * Reconnects when the subscription drops or goes silent, and then assumes it missed something: it
 * reloads every consumer and topic and wakes every parked poll.
 */
public final class NotificationVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(NotificationVerticle.class.getName());
  private static final long RETRY_MS = 500;
  /** A full reload now and then, in case an announcement was lost on the way. */
  private static final long FULL_RELOAD_MS = 30_000;
  /**
   * How often the subscription is checked, and how soon it must carry an echo: a Redis host that
   * vanished (power, partition) closes no socket, and a silent subscription would miss every wake-up.
   */
  private static final long CHECK_MS = 2_000;
  /** Body prefix of the echoes this node publishes on its own wake channel to check its subscription. */
  public static final String ECHO = "echo ";
  /** How often a cluster's primaries are looked at for this node's alive subscriptions. */
  private static final long ALIVE_MS = 1_000;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final TopicDirectory topics;
  private final String wakeChannel;
  private final String aliveChannel;
  /**
   * On a Redis Cluster: per primary, a connection subscribed to this node's alive channel, whose
   * subscribers there tell the scripts of that shard that this node listens (see wake_waiter in
   * wakeups.lib.lua; its wake-ups reach it on its one subscription, wherever that is).
   */
  private final Map<String, Future<RedisConnection>> alive = new HashMap<>();
  private RedisStore store;
  private RedisConnection connection;
  private boolean stopping;
  private boolean retrying;
  private long checking = -1;
  /** Echoes sent, the last one whose PUBLISH Redis confirmed (and since when), the last one heard. */
  private long echoSent;
  private long echoAwaited;
  private long echoAwaitedSince;
  private long echoHeard;

  public NotificationVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory, TopicDirectory topics,
      String node) {
    this.stores = stores;
    this.directory = directory;
    this.topics = topics;
    this.wakeChannel = Keys.wakeChannel(node);
    this.aliveChannel = Keys.aliveChannel(node);
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    vertx.setPeriodic(FULL_RELOAD_MS, t -> reloadAll().onFailure(failure -> LOG.log(
        System.Logger.Level.DEBUG, "Periodic settings reload failed: " + failure.getMessage())));
    if (store.isCluster()) {
      vertx.setPeriodic(ALIVE_MS, t -> keepAlive());
    }
    return subscribe().onSuccess(subscribed -> keepAlive());
  }

  /** On a cluster: an alive subscription on every primary, and none on a server that is no longer one. */
  private void keepAlive() {
    // only while the wake subscription is up: alive, a node that hears no wake-up takes them all
    if (stopping || !store.isCluster() || connection == null || retrying) {
      return;
    }
    Set<String> primaries = new HashSet<>(store.primaries());
    alive.entrySet().removeIf(entry -> {
      if (primaries.contains(entry.getKey())) {
        return false;
      }
      entry.getValue().onSuccess(RedisConnection::close);
      return true;
    });
    primaries.forEach(endpoint -> alive.computeIfAbsent(endpoint, this::subscribeAlive));
  }

  /** Lets every alive subscription go (the wake subscription is down: see keepAlive). */
  private void dropAlive() {
    alive.values().forEach(subscribed -> subscribed.onSuccess(RedisConnection::close));
    alive.clear();
  }

  /** A connection to {@code endpoint} subscribed to this node's alive channel; a failed one is tried again next round. */
  private Future<RedisConnection> subscribeAlive(String endpoint) {
    Promise<RedisConnection> subscribing = Promise.promise();
    Future<RedisConnection> subscribed = subscribing.future();
    store.connectTo(endpoint).compose(conn -> {
      conn.handler(message -> { });
      conn.exceptionHandler(failure -> conn.close());
      conn.endHandler(ended -> alive.remove(endpoint, subscribed));
      return conn.send(Request.cmd(Command.SUBSCRIBE).arg(aliveChannel)).timeout(CHECK_MS, TimeUnit.MILLISECONDS)
          .onFailure(failure -> conn.close())
          .map(conn);
    }).onComplete(subscribing);
    subscribed.onFailure(failure -> alive.remove(endpoint, subscribed));
    return subscribed;
  }

  @Override
  public Future<?> stop() {
    stopping = true;
    return store.close();
  }

  private Future<Void> subscribe() {
    return store.connect().compose(conn -> {
      connection = conn;
      conn.handler(this::onMessage);
      conn.exceptionHandler(failure -> resubscribeLater());
      conn.endHandler(ended -> resubscribeLater());
      return conn.send(Request.cmd(Command.SUBSCRIBE).arg(wakeChannel).arg(aliveChannel).arg(Keys.THROTTLE_CHANNEL)
          .arg(Keys.ADMIN_CHANNEL).arg(Keys.ROOM_CHANNEL)).timeout(CHECK_MS, TimeUnit.MILLISECONDS)
          .onSuccess(subscribed -> watch(conn))
          .onFailure(failure -> store.unanswered(conn))
          .mapEmpty();
    });
  }

  /**
   * Checks the subscribed connection until it is replaced: each round publishes an echo on this
   * node's own channel, and an echo not heard by the next round means the subscription is dead. A
   * PING on the connection itself cannot be used: the client hands the PING's reply slot to any
   * message that arrives first, so under a steady stream of messages a live subscription looked dead.
   * An echo whose PUBLISH failed proves nothing either way (Redis itself is away) and is not awaited.
   */
  private void watch(RedisConnection conn) {
    vertx.cancelTimer(checking);
    // an echo the previous connection owed is not this one's
    echoHeard = echoAwaited;
    checking = vertx.setPeriodic(CHECK_MS, t -> {
      if (connection != conn) {
        vertx.cancelTimer(t);
        return;
      }
      if (echoAwaited > echoHeard) {
        if (System.nanoTime() - echoAwaitedSince >= TimeUnit.MILLISECONDS.toNanos(CHECK_MS)) {
          LOG.log(System.Logger.Level.WARNING, "Redis subscription did not carry its echo within " + CHECK_MS + " ms");
          store.unanswered(conn);
          resubscribeLater();
        }
        return;
      }
      long echo = ++echoSent;
      store.send(Request.cmd(Command.PUBLISH).arg(wakeChannel).arg(ECHO + echo)).onSuccess(published -> {
        if (connection == conn && echo > echoAwaited) {
          echoAwaited = echo;
          echoAwaitedSince = System.nanoTime();
        }
      });
    });
  }

  private void onMessage(Response message) {
    // pub/sub messages are arrays (PUSH over RESP3, MULTI over RESP2); a stray reply is none of ours
    boolean array = message != null && (message.type() == ResponseType.PUSH || message.type() == ResponseType.MULTI);
    if (!array || message.size() < 3 || !"message".equals(message.get(0).toString())) {
      return;
    }
    String channel = message.get(1).toString();
    String body = message.get(2).toString();
    if (channel.equals(wakeChannel) && body.startsWith(ECHO)) {
      echoHeard = Math.max(echoHeard, Long.parseLong(body.substring(ECHO.length())));
    } else if (channel.equals(wakeChannel)) {
      // "node/instance/poll consumer": to the instance holding the poll
      int instanceEnd = body.lastIndexOf('/', body.indexOf(' '));
      if (instanceEnd > 0) {
        vertx.eventBus().send(Addresses.wake(body.substring(0, instanceEnd)), body);
      }
    } else if (channel.equals(Keys.THROTTLE_CHANNEL)) {
      vertx.eventBus().publish(Addresses.BLOCKED, body);
    } else if (channel.equals(Keys.ROOM_CHANNEL)) {
      // room under maxUnackedTotal: every parked poll may try again
      vertx.eventBus().publish(Addresses.WAKE_ALL, "");
    } else if (channel.equals(Keys.ADMIN_CHANNEL)) {
      Future<Void> reload = body.startsWith(Keys.TOPIC_CHANGED)
          ? topics.reload(body.substring(Keys.TOPIC_CHANGED.length()))
          : directory.reload(body.substring(Keys.CONSUMER_CHANGED.length()));
      reload.onFailure(failure -> LOG.log(System.Logger.Level.WARNING,
          "Could not reload " + body + ": " + failure.getMessage()));
    }
  }

  private Future<Void> reloadAll() {
    return directory.reload().compose(ok -> topics.reload());
  }

  private void resubscribeLater() {
    if (stopping || retrying) {
      return;
    }
    retrying = true;
    dropAlive();
    if (connection != null) {
      connection.close();
      connection = null;
    }
    vertx.setTimer(RETRY_MS, t -> subscribe()
        .compose(ok -> reloadAll())
        .onComplete(done -> {
          retrying = false;
          if (done.succeeded()) {
            keepAlive();
            vertx.eventBus().publish(Addresses.WAKE_ALL, "");
          } else {
            LOG.log(System.Logger.Level.WARNING, "Redis subscription lost, retrying: " + done.cause().getMessage());
            resubscribeLater();
          }
        }));
  }
}
