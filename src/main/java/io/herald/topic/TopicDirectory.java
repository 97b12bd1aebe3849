package io.herald.topic;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Topic settings: this node's copy of those configured (loaded from Redis, refreshed when a change
 * is announced), and their writes. Readers on any thread see an immutable snapshot.
 */
public final class TopicDirectory {
  private static final System.Logger LOG = System.getLogger(TopicDirectory.class.getName());

  private final RedisStore store;
  private final AtomicReference<Map<String, TopicSettings>> topics = new AtomicReference<>(Map.of());

  public TopicDirectory(RedisStore store) {
    this.store = store;
  }

  /** The topic's settings; the defaults for a topic never configured. */
  public TopicSettings get(String topic) {
    TopicSettings settings = topics.get().get(topic);
    return settings != null ? settings : TopicSettings.defaults(topic);
  }

  /** The topics with settings of their own. */
  public Map<String, TopicSettings> configured() {
    return topics.get();
  }

  /** Stores the topic's settings and tells every node. */
  public Future<Void> put(TopicSettings settings) {
    return store.send(Request.cmd(Command.HSET).arg(Keys.TOPICS).arg(settings.name()).arg(settings.toJson().encode()))
        .compose(ignored -> announce(settings.name()))
        .compose(ignored -> reload(settings.name()));
  }

  /** Forgets the topic's settings (it has the defaults again); true when it had some. */
  public Future<Boolean> delete(String topic) {
    return store.send(Request.cmd(Command.HDEL).arg(Keys.TOPICS).arg(topic))
        .compose(removed -> announce(topic).compose(ignored -> reload(topic)).map(removed.toInteger() == 1));
  }

  private Future<Void> announce(String topic) {
    return store.send(Request.cmd(Command.PUBLISH).arg(Keys.ADMIN_CHANNEL).arg(Keys.TOPIC_CHANGED + topic)).mapEmpty();
  }

  /** Loads every topic's settings from Redis. */
  public Future<Void> reload() {
    return store.send(Request.cmd(Command.HGETALL).arg(Keys.TOPICS)).map(reply -> {
      Map<String, TopicSettings> loaded = new HashMap<>();
      for (String name : reply.getKeys()) {
        TopicSettings settings = decode(name, reply.get(name));
        if (settings != null) {
          loaded.put(name, settings);
        }
      }
      topics.set(Map.copyOf(loaded));
      return null;
    });
  }

  /** Reloads one topic's settings after a change was announced. */
  public Future<Void> reload(String topic) {
    return store.send(Request.cmd(Command.HGET).arg(Keys.TOPICS).arg(topic)).map(reply -> {
      TopicSettings settings = reply == null ? null : decode(topic, reply);
      topics.updateAndGet(current -> {
        Map<String, TopicSettings> next = new HashMap<>(current);
        if (settings == null) {
          next.remove(topic);
        } else {
          next.put(topic, settings);
        }
        return Map.copyOf(next);
      });
      return null;
    });
  }

  private static TopicSettings decode(String name, Response stored) {
    try {
      return TopicSettings.parse(name, new JsonObject(stored.toString()));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "Ignoring topic '" + name + "' with unreadable settings in Redis: " + e.getMessage());
      return null;
    }
  }
}
