package io.herald.delivery;

import io.herald.Addresses;
import io.herald.consumer.ConsumerDirectory;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.topic.TopicDirectory;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.RedisConnection;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Carries Redis pub/sub into this node: wake-ups for its parked polls (events published, acked or
 * due on any node) go over the event bus to the verticle instance of the poll, rate-limit blocks
 * to every instance (for their sockets), settings changes reload the consumer or topic directory. Reconnects when the subscription drops, and then assumes it missed
 * something: it reloads every consumer and topic and wakes every parked poll.
 */
public final class NotificationVerticle extends VerticleBase {
  private static final System.Logger LOG = System.getLogger(NotificationVerticle.class.getName());
  private static final long RETRY_MS = 500;
  /** A full reload now and then, in case an announcement was lost on the way. */
  private static final long FULL_RELOAD_MS = 30_000;
  /**
   * How often the subscription is pinged, and how soon it must answer: a Redis host that vanished
   * (power, partition) closes no socket, and a silent subscription would miss every wake-up.
   */
  private static final long PING_MS = 2_000;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final TopicDirectory topics;
  private final String wakeChannel;
  private RedisStore store;
  private RedisConnection connection;
  private boolean stopping;
  private boolean retrying;
  private long pinging = -1;

  public NotificationVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory, TopicDirectory topics,
      String node) {
    this.stores = stores;
    this.directory = directory;
    this.topics = topics;
    this.wakeChannel = Keys.wakeChannel(node);
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    vertx.setPeriodic(FULL_RELOAD_MS, t -> reloadAll().onFailure(failure -> LOG.log(
        System.Logger.Level.DEBUG, "Periodic settings reload failed: " + failure.getMessage())));
    return subscribe();
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
      return conn.send(Request.cmd(Command.SUBSCRIBE).arg(wakeChannel).arg(Keys.THROTTLE_CHANNEL).arg(Keys.ADMIN_CHANNEL)
          .arg(Keys.ROOM_CHANNEL)).timeout(PING_MS, TimeUnit.MILLISECONDS)
          .onSuccess(subscribed -> watch(conn))
          .onFailure(failure -> store.unanswered(conn))
          .mapEmpty();
    });
  }

  /** Pings the subscribed connection until it is replaced; one that does not answer in time is. */
  private void watch(RedisConnection conn) {
    vertx.cancelTimer(pinging);
    pinging = vertx.setPeriodic(PING_MS, t -> {
      if (connection != conn) {
        vertx.cancelTimer(t);
        return;
      }
      conn.send(Request.cmd(Command.PING)).timeout(PING_MS, TimeUnit.MILLISECONDS).onFailure(failure -> {
        if (connection == conn) {
          LOG.log(System.Logger.Level.WARNING, "Redis subscription did not answer a ping: " + failure.getMessage());
          store.unanswered(conn);
          resubscribeLater();
        }
      });
    });
  }

  private void onMessage(Response message) {
    if (message.size() < 3 || !"message".equals(message.get(0).toString())) {
      return;
    }
    String channel = message.get(1).toString();
    String body = message.get(2).toString();
    if (channel.equals(wakeChannel)) {
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
    if (connection != null) {
      connection.close();
      connection = null;
    }
    vertx.setTimer(RETRY_MS, t -> subscribe()
        .compose(ok -> reloadAll())
        .onComplete(done -> {
          retrying = false;
          if (done.succeeded()) {
            vertx.eventBus().publish(Addresses.WAKE_ALL, "");
          } else {
            LOG.log(System.Logger.Level.WARNING, "Redis subscription lost, retrying: " + done.cause().getMessage());
            resubscribeLater();
          }
        }));
  }
}
