package io.herald.store;

import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Settings stored as a Redis hash of name → JSON (consumers, topics), read back through a parser.
 * An entry that no longer parses is logged and skipped, not allowed to stop the node.
 */
public final class SettingsHash<T> {
  private static final System.Logger LOG = System.getLogger(SettingsHash.class.getName());

  private final RedisStore store;
  private final String key;
  private final String kind;
  private final BiFunction<String, JsonObject, T> parser;

  /** @param kind what an entry is ("consumer", "topic"), for the log */
  public SettingsHash(RedisStore store, String key, String kind, BiFunction<String, JsonObject, T> parser) {
    this.store = store;
    this.key = key;
    this.kind = kind;
    this.parser = parser;
  }

  /** Every entry that parses, by name. */
  public Future<Map<String, T>> all() {
    return store.send(Request.cmd(Command.HGETALL).arg(key)).map(reply -> {
      Map<String, T> entries = new HashMap<>();
      for (String name : reply.getKeys()) {
        T settings = decode(name, reply.get(name));
        if (settings != null) {
          entries.put(name, settings);
        }
      }
      return entries;
    });
  }

  /** One entry; null when there is none (or it does not parse). */
  public Future<T> get(String name) {
    return store.send(Request.cmd(Command.HGET).arg(key).arg(name))
        .map(reply -> reply == null ? null : decode(name, reply));
  }

  private T decode(String name, Response stored) {
    try {
      return parser.apply(name, new JsonObject(stored.toString()));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "Ignoring " + kind + " '" + name + "' with unreadable settings in Redis: "
          + e.getMessage());
      return null;
    }
  }
}
