package io.herald.copy;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The stored copies of rounds' events (docs/internals.md): written once before any consumer may
 * take them, read by the node that builds a batch, released by each consumer that let go of them.
 * Copies never change, so the node keeps the ones it wrote or read in a cache of its own, shared by
 * its event loops.
 */
public final class Copies {
  /** The first characters of an eventId that name its copy (see EventIds). */
  public static final int COPY_ID_LENGTH = 26;
  /** How long a copy outlives twice the longest retention among its holders (clock skew, a late scheduler). */
  static final long MARGIN_MS = 3_600_000;
  /** How many of a consumer's copies one step of {@link #coverHeld} pushes. */
  private static final int COVER_PAGE = 500;

  private static final System.Logger LOG = System.getLogger(Copies.class.getName());

  private final Cache<String, EventCopy> cache;
  private volatile Layout layout = Layout.INLINE;

  /**
   * The layouts a spool is written in, each reading all before it (docs/internals.md, "Upgrades"),
   * named as {@code herald:layout} holds them. A new installation starts in the newest.
   */
  private enum Layout {
    /** Blobs in each consumer's events (what versions before the shared layout wrote; no value). */
    INLINE,
    /** Stubs in events, the event's bytes in a stored copy. */
    SHARED,
    /** Shared, and a waiting event's stub kept in its backlog pair. */
    PACKED,
    /** Packed, and batch keys holding short batch records. */
    COMPACT;

    static final Layout NEWEST = COMPACT;

    String value() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The layout {@code herald:layout} names; an unknown value spools inline, as before any was known. */
    static Layout of(String value) {
      for (Layout layout : values()) {
        if (layout.value().equals(value)) {
          return layout;
        }
      }
      return INLINE;
    }
  }

  /** A node's copies, {@code cacheBytes} of them kept decoded. */
  public Copies(long cacheBytes) {
    cache = Caffeine.newBuilder().maximumWeight(cacheBytes)
        .weigher((String id, EventCopy copy) -> copy.bytes() + 64).build();
  }

  /** The copy an eventId names, when its stub names none of its own. */
  public static String copyOf(String eventId) {
    return eventId.substring(0, COPY_ID_LENGTH);
  }

  /**
   * Writes a copy of {@code events}, marked held by {@code holders}, kept {@link #keptMs} of
   * {@code retentionMs} (the longest among them); a confirmed write (waited for by replicas with
   * redis.waitReplicas), so that no failover loses a copy a consumer holds.
   */
  public Future<Void> write(RedisStore store, String copyId, List<EventCopy.Event> events, long retentionMs,
      Collection<String> holders) {
    List<Object> args = new ArrayList<>(holders.size() + 2);
    args.add(Buffer.buffer(EventCopy.encode(events)));
    args.add(keptMs(retentionMs));
    args.addAll(holders);
    return store.eval(Script.COPY_WRITE, List.of(Keys.copy(copyId)), args)
        .onSuccess(written -> cache.put(copyId, EventCopy.of(events)))
        .mapEmpty();
  }

  /**
   * How long a copy written for holders of this retention is kept: a holder keeps an event at most
   * twice its retention after its publish (a dead-letter queue's stay ends then), and an hour.
   */
  public static long keptMs(long retentionMs) {
    return 2 * retentionMs + MARGIN_MS;
  }

  /** Keeps these copies {@link #keptMs} of {@code retentionMs} from now at least (copy_extend.lua). */
  public Future<Void> cover(RedisStore store, Collection<String> copyIds, long retentionMs) {
    List<Future<Response>> pushes = copyIds.stream().map(copyId -> store.eval(Script.COPY_EXTEND,
        List.of(Keys.copy(copyId)), List.of(keptMs(retentionMs)))).toList();
    return Future.all(pushes).mapEmpty();
  }

  /**
   * Keeps every copy {@code consumer} holds events of for its new {@code retentionMs}, a page of its
   * copies at a time, then records that they are, unless its settings changed since those of
   * {@code generation} (docs/internals.md, "Retention"). A failure leaves the record as it was, so
   * that the next settings change walks again.
   */
  public Future<Void> coverHeld(RedisStore store, String consumer, long retentionMs, long generation) {
    return coverHeld(store, consumer, retentionMs, "0")
        .compose(done -> store.eval(Script.COPIES_COVERED, Keys.consumer(consumer), List.of(generation, retentionMs)))
        .mapEmpty();
  }

  private Future<Void> coverHeld(RedisStore store, String consumer, long retentionMs, String cursor) {
    return store.send(Request.cmd(Command.HSCAN).arg(Keys.copiesHeld(consumer)).arg(cursor).arg("COUNT")
        .arg(COVER_PAGE)).compose(page -> {
          Response fields = page.get(1);
          List<String> copyIds = new ArrayList<>(fields.size() / 2);
          for (int i = 0; i < fields.size(); i += 2) {
            copyIds.add(fields.get(i).toString());
          }
          String next = page.get(0).toString();
          return cover(store, copyIds, retentionMs)
              .compose(covered -> "0".equals(next) ? Future.succeededFuture() : coverHeld(store, consumer, retentionMs, next));
        });
  }

  /** The copies of these ids that are still stored; those gone are not in the answer. */
  public Future<Map<String, EventCopy>> read(RedisStore store, Collection<String> copyIds) {
    Map<String, EventCopy> found = new HashMap<>();
    List<String> missing = new ArrayList<>();
    for (String copyId : copyIds) {
      EventCopy copy = cache.getIfPresent(copyId);
      if (copy != null) {
        found.put(copyId, copy);
      } else if (!missing.contains(copyId)) {
        missing.add(copyId);
      }
    }
    if (missing.isEmpty()) {
      return Future.succeededFuture(found);
    }
    List<Future<Response>> reads = missing.stream()
        .map(copyId -> store.send(Request.cmd(Command.HGET).arg(Keys.copy(copyId)).arg("d"))).toList();
    return Future.all(reads).map(done -> {
      for (int i = 0; i < missing.size(); i++) {
        Response frame = reads.get(i).result();
        if (frame != null) {
          EventCopy copy = EventCopy.decode(frame.toBytes());
          cache.put(missing.get(i), copy);
          found.put(missing.get(i), copy);
        }
      }
      return found;
    });
  }

  /**
   * Releases the copies a consumer's script answered it let go of: the items of {@code reply} from
   * {@code from} on. One that fails stays until its expiry (never released early: docs/internals.md).
   */
  public void releaseAnswered(RedisStore store, String consumer, Response reply, int from) {
    if (reply == null || reply.type() != ResponseType.MULTI || reply.size() <= from) {
      return;
    }
    List<String> copyIds = new ArrayList<>(reply.size() - from);
    for (int i = from; i < reply.size(); i++) {
      copyIds.add(reply.get(i).toString());
    }
    release(store, consumer, copyIds).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG,
        "Copies " + consumer + " let go of stay until their expiry: " + failure.getMessage()));
  }

  /** Whether new events are spooled in the shared layout (docs/internals.md, "Upgrades"). */
  public boolean shared() {
    return layout.compareTo(Layout.SHARED) >= 0;
  }

  /**
   * Whether new events are spooled in the packed layout: shared, and a waiting event's stub kept in
   * its backlog pair (docs/internals.md, "Stubs in the backlog").
   */
  public boolean packed() {
    return layout.compareTo(Layout.PACKED) >= 0;
  }

  /**
   * Whether polls write short batch records (the compact layout: docs/internals.md, "Batch
   * records"), which a node of an earlier layout cannot read.
   */
  public boolean shortBatches() {
    return layout.compareTo(Layout.COMPACT) >= 0;
  }

  /**
   * Reads which layout new events are spooled in from {@code herald:layout}; a Redis that holds no
   * consumers and says none is a new installation, which never spools inline.
   */
  public Future<Void> readLayout(RedisStore store) {
    return store.send(Request.cmd(Command.GET).arg(Keys.LAYOUT)).compose(layout -> {
      if (layout != null) {
        this.layout = Layout.of(layout.toString());
        return Future.succeededFuture();
      }
      return store.send(Request.cmd(Command.EXISTS).arg(Keys.CONSUMERS)).compose(existing -> existing.toInteger() > 0
          ? Future.succeededFuture()
          : store.send(Request.cmd(Command.SET).arg(Keys.LAYOUT).arg(Layout.NEWEST.value()).arg("NX"))
              .compose(set -> readLayout(store)));
    });
  }

  /**
   * Releases every copy a deleted consumer held, named by the fields of {@code leaving}
   * (consumer_delete.lua), 100 at a time, and deletes that key. A node that stops meanwhile leaves
   * the rest to their expiry.
   */
  public void releaseLeaving(RedisStore store, String consumer, String leaving) {
    store.send(Request.cmd(Command.HSCAN).arg(leaving).arg("0").arg("COUNT").arg(100))
        .compose(page -> {
          Response fields = page.get(1);
          List<String> copyIds = new ArrayList<>();
          for (int i = 0; i < fields.size(); i += 2) {
            copyIds.add(fields.get(i).toString());
          }
          if (copyIds.isEmpty()) {
            return store.send(Request.cmd(Command.DEL).arg(leaving)).map(false);
          }
          Request done = Request.cmd(Command.HDEL).arg(leaving);
          copyIds.forEach(done::arg);
          return release(store, consumer, copyIds).compose(released -> store.send(done)).map(true);
        })
        .onSuccess(more -> {
          if (more) {
            releaseLeaving(store, consumer, leaving);
          }
        })
        .onFailure(failure -> LOG.log(System.Logger.Level.WARNING, "The copies deleted consumer '" + consumer
            + "' held stay until their expiry: " + failure.getMessage()));
  }

  /** {@code consumer} lets go of these copies: it holds none of their events (copy_release.lua). */
  public Future<Void> release(RedisStore store, String consumer, Collection<String> copyIds) {
    List<Future<Response>> releases = copyIds.stream()
        .map(copyId -> store.eval(Script.COPY_RELEASE, List.of(Keys.copy(copyId)), List.of(consumer))).toList();
    return Future.all(releases).mapEmpty();
  }
}
