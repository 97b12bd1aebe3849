package io.herald.consumer;

import io.herald.copy.Copies;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.ResponseType;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/** Creates, replaces and deletes consumers in Redis and tells every node. */
public final class ConsumerStore {
  private static final SecureRandom RANDOM = new SecureRandom();
  private final RedisStore store;
  private final Copies copies;

  public ConsumerStore(RedisStore store, Copies copies) {
    this.store = store;
    this.copies = copies;
  }

  /**
   * Writes the consumer's own keys first (the scripts' source of truth); when its retention grew
   * beyond what its stored copies are kept for, pushes their expiry; then writes the list every
   * node loads and announces the change. Returns true when the consumer was created.
   */
  public Future<Boolean> put(ConsumerSettings settings) {
    byte[] salt = new byte[16];
    RANDOM.nextBytes(salt);
    List<Object> args = new ArrayList<>();
    args.add(HexFormat.of().formatHex(salt));
    args.addAll(settings.scriptFields());
    return store.eval(Script.CONSUMER_PUT, Keys.consumer(settings.name()), args)
        .compose(put -> (put.get(1).toLong() < settings.retentionMs()
                ? copies.coverHeld(store, settings.name(), settings.retentionMs(), put.get(2).toLong())
                : Future.<Void>succeededFuture())
            .compose(covered -> store.sendConfirmed(Request.cmd(Command.HSET).arg(Keys.CONSUMERS)
                .arg(settings.name()).arg(settings.toJson().encode())))
            .compose(ignored -> announce(settings.name()))
            .map(ignored -> put.get(0).toInteger() == 1));
  }

  /**
   * Removes the consumer from the list first so no node spools for it, then its keys; then, in the
   * background, releases the stored copies it held (docs/internals.md).
   */
  public Future<Boolean> delete(String name) {
    return store.sendConfirmed(Request.cmd(Command.HDEL).arg(Keys.CONSUMERS).arg(name))
        .compose(removed -> store.eval(Script.CONSUMER_DELETE, deleteKeys(name), List.of())
            .compose(deleted -> {
              if (deleted.type() == ResponseType.MULTI) {
                copies.releaseLeaving(store, name, deleted.get(1).toString());
              }
              return announce(name).map(ignored -> removed.toInteger() == 1
                  || deleted.type() == ResponseType.MULTI || deleted.toInteger() == 1);
            }));
  }

  private static List<String> deleteKeys(String name) {
    List<String> keys = new ArrayList<>(Keys.spool(name));
    keys.add(Keys.leaving(name));
    return keys;
  }

  private Future<Void> announce(String name) {
    return store.send(Request.cmd(Command.PUBLISH).arg(Keys.ADMIN_CHANNEL).arg(Keys.CONSUMER_CHANGED + name)).mapEmpty();
  }
}
