package io.herald.topic;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.SettingsHash;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Topic settings: this node's copy of those configured (loaded from Redis, refreshed when a change
 * is announced), and their writes. Readers on any thread see an immutable snapshot.
 */
public final class TopicDirectory {
  private final RedisStore store;
  private final SettingsHash<TopicSettings> stored;
  private final AtomicReference<Map<String, TopicSettings>> topics = new AtomicReference<>(Map.of());

  public TopicDirectory(RedisStore store) {
    this.store = store;
    this.stored = new SettingsHash<>(store, Keys.TOPICS, "topic", TopicSettings::parse);
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
    return stored.all().map(loaded -> {
      topics.set(Map.copyOf(loaded));
      return null;
    });
  }

  /** Reloads one topic's settings after a change was announced. */
  public Future<Void> reload(String topic) {
    return stored.get(topic).map(settings -> {
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
}
