package io.herald.consumer;

import io.herald.protocol.ApiException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.SettingsHash;
import io.vertx.core.Future;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * This node's copy of every consumer's settings, loaded from Redis and refreshed when an admin
 * change is announced. Readers on any thread see an immutable snapshot; topic matches are cached
 * per snapshot.
 */
public final class ConsumerDirectory {
  private static final int MATCH_CACHE_SIZE = 10_000;

  private final SettingsHash<ConsumerSettings> stored;
  /** Replaced whole, by compare-and-set: reloads run on several event loops at once. */
  private final AtomicReference<Snapshot> snapshot = new AtomicReference<>(new Snapshot(Map.of()));

  public ConsumerDirectory(RedisStore store) {
    this.stored = new SettingsHash<>(store, Keys.CONSUMERS, "consumer", ConsumerSettings::parse);
  }

  private record Snapshot(Map<String, ConsumerSettings> consumers,
      Map<String, List<ConsumerSettings>> matches) {
    Snapshot(Map<String, ConsumerSettings> consumers) {
      this(Map.copyOf(consumers), new ConcurrentHashMap<>());
    }
  }

  public ConsumerSettings get(String name) {
    return snapshot.get().consumers().get(name);
  }

  public Map<String, ConsumerSettings> all() {
    return snapshot.get().consumers();
  }

  /** The consumers whose patterns match {@code topic}. */
  public List<ConsumerSettings> matching(String topic) {
    Snapshot current = snapshot.get();
    List<ConsumerSettings> cached = current.matches().get(topic);
    if (cached != null) {
      return cached;
    }
    List<ConsumerSettings> matched = current.consumers().values().stream().filter(c -> c.matches(topic)).toList();
    if (current.matches().size() >= MATCH_CACHE_SIZE) {
      current.matches().clear();
    }
    current.matches().put(topic, matched);
    return matched;
  }

  /** The consumer's settings, or null if there is no such consumer; one this node has not heard of yet is looked up in Redis. */
  public Future<ConsumerSettings> lookup(String name) {
    ConsumerSettings known = get(name);
    return known != null ? Future.succeededFuture(known) : reload(name).map(ignored -> get(name));
  }

  /** As {@link #lookup}, failing with 404 NOT_FOUND when there is no such consumer. */
  public Future<ConsumerSettings> require(String name) {
    return lookup(name).compose(found -> found != null
        ? Future.succeededFuture(found) : Future.failedFuture(ApiException.unknownConsumer(name)));
  }

  /** As {@link #require}, failing with 409 CONSUMER_DISABLED when the consumer is shut down. */
  public Future<ConsumerSettings> requireEnabled(String name) {
    return require(name).compose(found -> found.enabled()
        ? Future.succeededFuture(found) : Future.failedFuture(ApiException.consumerDisabled(name)));
  }

  /** Loads every consumer from Redis. */
  public Future<Void> reload() {
    return stored.all().map(consumers -> {
      snapshot.set(new Snapshot(consumers));
      return null;
    });
  }

  /** Reloads one consumer after a change was announced. */
  public Future<Void> reload(String name) {
    return stored.get(name).map(settings -> {
      snapshot.updateAndGet(current -> {
        Map<String, ConsumerSettings> consumers = new HashMap<>(current.consumers());
        if (settings == null) {
          consumers.remove(name);
        } else {
          consumers.put(name, settings);
        }
        return new Snapshot(consumers);
      });
      return null;
    });
  }
}
