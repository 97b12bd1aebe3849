package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.copy.Copies;
import io.herald.copy.EventCopy;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.StoreException;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The shared layout's part of a round (docs/internals.md): writes the copies of the events its spool
 * calls carry, marked held by the consumers they go to, and puts each event's stub in place of its
 * blob in those calls. An event the round does not spool for the first time (a repeat of a publish
 * whose outcome was unknown, a restore after a take-back) goes to a copy of its own making, named
 * in its stub: a consumer takes a copy only in the one spool call of the round that wrote it. So
 * does a copy whose shard of a Redis Cluster failed its write: it is written once more, on another.
 */
final class RoundCopies {
  private static final SecureRandom RANDOM = new SecureRandom();
  /** publish.lua's arguments per event: eventId, blob, then five more. */
  private static final int STRIDE = 7;

  /** One copy of the round: its events, the consumers it goes to, and where its stubs are in their calls. */
  private record Copy(Map<String, Buffer> events, Set<String> holders, List<Stub> stubs) {
    Copy() {
      this(new LinkedHashMap<>(), new LinkedHashSet<>(), new ArrayList<>());
    }
  }

  /** A stub's place: a spool call's arguments, the stub's index there, and the event's size. */
  private record Stub(List<Object> args, int at, int size) {}

  private RoundCopies() {}

  /**
   * Writes the copies of the events in {@code spools} (consumer -> publish.lua's event arguments)
   * and swaps their blobs for stubs; {@code elsewhere} tells the events that go to a copy made for
   * them rather than the one their eventId names. Answers the retention each copy is kept for
   * (see {@link Copies#keptMs}). Fails when a copy could not be written; the failure is
   * unreplicated only when every copy is on its primary, unconfirmed by replicas.
   */
  static Future<Map<String, Long>> write(Copies copies, RedisStore store, ConsumerDirectory consumers,
      Map<String, List<Object>> spools, Predicate<String> elsewhere) {
    String madeCopy = null;
    Map<String, Copy> round = new LinkedHashMap<>();
    for (Map.Entry<String, List<Object>> spool : spools.entrySet()) {
      List<Object> args = spool.getValue();
      for (int i = 0; i < args.size(); i += STRIDE) {
        String eventId = (String) args.get(i);
        Buffer blob = (Buffer) args.get(i + 1);
        String copyId;
        if (elsewhere.test(eventId)) {
          madeCopy = madeCopy == null ? madeCopyId() : madeCopy;
          copyId = madeCopy;
        } else {
          copyId = Copies.copyOf(eventId);
        }
        Copy copy = round.computeIfAbsent(copyId, c -> new Copy());
        copy.events().putIfAbsent(eventId, blob);
        copy.holders().add(spool.getKey());
        copy.stubs().add(new Stub(args, i + 1, blob.length()));
        args.set(i + 1, stub(copyId, eventId, blob.length()));
        if (copies.packed()) {
          // publish.lua's flag P: its stub may wait in its backlog pair
          args.set(i + 4, args.get(i + 4) + "P");
        }
      }
    }
    Map<String, Long> kept = new java.util.concurrent.ConcurrentHashMap<>();
    List<Future<Void>> writes = new ArrayList<>();
    round.forEach((copyId, copy) -> writes.add(write(copies, store, consumers, copyId, copy, kept)
        .recover(failure -> {
          if (!store.isCluster() || StoreException.unreplicated(failure)) {
            return Future.failedFuture(failure);
          }
          // its shard did not take it: another may (a shard nobody serves stops only its own slots)
          String elsewhereId = madeCopyId(store, store.serverOf(Keys.copy(copyId)));
          copy.stubs().forEach(stub -> stub.args().set(stub.at(), stub.size() + "@" + elsewhereId));
          return write(copies, store, consumers, elsewhereId, copy, kept);
        })));
    // every write ends before the round goes on: a copy that was not written must not be named
    return Future.join(writes).transform(done -> {
      List<Throwable> failures = writes.stream().filter(Future::failed).map(Future::cause).toList();
      if (failures.isEmpty()) {
        return Future.succeededFuture(kept);
      }
      return Future.failedFuture(failures.stream().filter(failure -> !StoreException.unreplicated(failure))
          .findFirst().orElse(failures.get(0)));
    });
  }

  private static Future<Void> write(Copies copies, RedisStore store, ConsumerDirectory consumers, String copyId,
      Copy copy, Map<String, Long> kept) {
    long retentionMs = copy.holders().stream().map(consumers::get).filter(Objects::nonNull)
        .mapToLong(ConsumerSettings::retentionMs).max().orElse(0);
    List<EventCopy.Event> events = new ArrayList<>(copy.events().size());
    copy.events().forEach((eventId, blob) -> events.add(new EventCopy.Event(eventId, blob)));
    return copies.write(store, copyId, events, retentionMs, copy.holders())
        .onSuccess(written -> kept.put(copyId, retentionMs));
  }

  /**
   * The copies of {@code kept} that the stubs of a spool call's {@code events} name and that are
   * kept for less than the retention its consumer answered having ({@code retentionMs}): this
   * node's copy of its settings was behind a change that raised it (docs/internals.md, "Retention").
   */
  static Set<String> keptTooShort(List<Object> events, Map<String, Long> kept, long retentionMs) {
    Set<String> tooShort = new LinkedHashSet<>();
    for (String copyId : named(events)) {
      Long basis = kept.get(copyId);
      if (basis != null && basis < retentionMs) {
        tooShort.add(copyId);
      }
    }
    return tooShort;
  }

  /** The copies the stubs of a spool call's {@code events} name. */
  static Set<String> named(List<Object> events) {
    Set<String> named = new LinkedHashSet<>();
    for (int i = 0; i < events.size(); i += STRIDE) {
      String stub = events.get(i + 1).toString();
      int at = stub.indexOf('@');
      named.add(at < 0 ? Copies.copyOf((String) events.get(i)) : stub.substring(at + 1));
    }
    return named;
  }

  /** The stub of an event in {@code copyId}: its size, and the copy when its eventId does not name it. */
  private static String stub(String copyId, String eventId, int size) {
    return copyId.equals(Copies.copyOf(eventId)) ? Integer.toString(size) : size + "@" + copyId;
  }

  /** A copy id no eventId names: 'r' and 25 random hex digits, as long as an eventId's prefix. */
  private static String madeCopyId() {
    byte[] random = new byte[13];
    RANDOM.nextBytes(random);
    return "r" + HexFormat.of().formatHex(random).substring(0, Copies.COPY_ID_LENGTH - 1);
  }

  /** As {@link #madeCopyId()}, one whose slot another primary than {@code avoided} serves (when one does). */
  private static String madeCopyId(RedisStore store, String avoided) {
    for (int tries = 0; tries < 64; tries++) {
      String copyId = madeCopyId();
      if (!store.serverOf(Keys.copy(copyId)).equals(avoided)) {
        return copyId;
      }
    }
    return madeCopyId();
  }
}
