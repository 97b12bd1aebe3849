package io.herald.quota;

import io.herald.Addresses;
import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.HashSlots;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicSettings;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;

/**
 * The gateway-wide account of spooled bytes and unacked events, against which publishes are
 * admitted (quotas of the gateway, namespaces, topics and consumers) and polls get room
 * (maxUnackedTotal). Every consumer's own figures stay exact in the consumer's keys and reach the
 * ledger when a publish or poll settles its hold, and otherwise within {@code quotas.syncMs} of any
 * script that changed them (this node remembers which consumers those were;
 * {@link SpoolAccountVerticle} sends their figures). Raised and cleared alerts are logged and
 * published. Shared by the node's verticles: thread-safe, each call with the caller's own store.
 *
 * <p>On one Redis server the ledger is one hash slot. On a Redis Cluster it has {@value #CLUSTER_SHARDS}
 * shards, spread over the slots like the due index, so that no primary takes every publish round
 * and poll: a consumer's entries live in its shard, and each shard judges against its budget, a
 * share of every gateway-wide limit granted by a bank ({@code quota_bank.lua}) whose grants never
 * sum to more than the limit. A shard that lacks budget asks the bank; when the bank lacks it too,
 * the shards give back what they do not use, and the shard asks again. So a limit is not overshot
 * (but for a failover that lost a ledger write, until the next reconciliation), and refusals come
 * when the whole gateway is nearly at it.
 */
public final class SpoolLedger {
  private static final System.Logger LOG = System.getLogger(SpoolLedger.class.getName());
  /** Alerts are published on this topic prefix and their name: spool, unacked. */
  public static final String ALERT_TOPICS = "$sys/alerts/";
  public static final int CLUSTER_SHARDS = 16;
  /** A shard that lacks budget is granted at least this share of the limit while the bank has plenty. */
  private static final int CHUNKS = 64;
  /** After the shards gave back nothing, one node asks them again at most this often (per scope). */
  static final long RELEASE_GAP_MS = 100;

  private final Vertx vertx;
  private final HeraldConfig.Quotas quotas;
  /** An unsettled hold is given back after this long: its publish's node died. */
  private final long holdMs;
  private final Set<String> touched = ConcurrentHashMap.newKeySet();
  private final List<List<String>> shardKeys;
  /** This node's releases of unused budget, by scope. */
  private final Map<String, Releases> releases = new ConcurrentHashMap<>();
  private final long releaseGapMs;

  /** @param shards 1 on one Redis server or a sentinel set, {@link #CLUSTER_SHARDS} on a cluster */
  public SpoolLedger(Vertx vertx, HeraldConfig.Quotas quotas, long redisTimeoutMs, int shards) {
    this(vertx, quotas, redisTimeoutMs, shards, RELEASE_GAP_MS);
  }

  /** @param releaseGapMs how often this node may have the shards give back a scope's unused budget */
  SpoolLedger(Vertx vertx, HeraldConfig.Quotas quotas, long redisTimeoutMs, int shards, long releaseGapMs) {
    this.vertx = vertx;
    this.releaseGapMs = releaseGapMs;
    this.quotas = quotas;
    this.holdMs = Math.max(10_000, 3 * redisTimeoutMs);
    this.shardKeys = IntStream.range(0, shards).mapToObj(shard -> Keys.ledger(shard, shards)).toList();
  }

  public HeraldConfig.Quotas quotas() {
    return quotas;
  }

  public int shards() {
    return shardKeys.size();
  }

  /** The keys of one shard, as {@code ledger.lib.lua} names them. */
  public List<String> keys(int shard) {
    return shardKeys.get(shard);
  }

  /**
   * The shard holding {@code consumer}'s entries and holds: the one whose nth of the slots holds the
   * consumer's own slot, so that on a cluster a consumer's ledger calls mostly go to the primary
   * that runs its own scripts, and each primary's share of the calls follows its consumers.
   */
  public int shardOf(String consumer) {
    return shardOf(consumer, shards());
  }

  /** The shard of {@code shards} holding {@code consumer}'s entries (see {@link #shardOf(String)}). */
  public static int shardOf(String consumer, int shards) {
    return shards == 1 ? 0 : HashSlots.of(Keys.consumerTag(consumer)) * shards / HashSlots.COUNT;
  }

  /** Notes that a script may have changed the consumer's spool. */
  public void touched(String consumer) {
    touched.add(consumer);
  }

  /** The consumers touched since the last call. */
  List<String> drainTouched() {
    List<String> drained = new ArrayList<>(touched);
    touched.removeAll(drained);
    return drained;
  }

  /**
   * True when events of {@code topic} for these consumers (the enabled ones) count against a quota
   * that spans consumers (gateway, namespace, topic); a consumer's own quotas are its spool script's.
   */
  public boolean applies(TopicSettings topic, List<ConsumerSettings> consumers) {
    if (quotas.spoolBytes() != null || topic.quotaBytes() != null) {
      return true;
    }
    for (ConsumerSettings consumer : consumers) {
      ConsumerSettings.Admission admission = consumer.admission();
      if (admission.enabled() && quotas.namespace(admission.namespace()) != null) {
        return true;
      }
    }
    return false;
  }

  /** The events of one publish request: their topic, the consumers they go to, and their sizes. */
  public record Group(TopicSettings topic, List<ConsumerSettings> consumers, List<Integer> sizes) {}

  /**
   * Decides for every event of these groups, in order, whether it fits every quota, and holds the
   * room it takes under {@code holdId} until {@link #settle}: in each shard, for its consumers.
   */
  public Future<List<Verdict>> reserve(RedisStore store, String holdId, List<Group> groups) {
    Map<String, Long> limits = new HashMap<>();
    limit(limits, "g", quotas.spoolBytes());
    // per shard: its part of each group (the groups' consumers in that shard), and which group that was
    Map<Integer, List<Group>> parts = new TreeMap<>();
    Map<Integer, List<Integer>> partOf = new HashMap<>();
    for (int g = 0; g < groups.size(); g++) {
      Group group = groups.get(g);
      if (group.topic().quotaBytes() != null) {
        limit(limits, "t:" + group.topic().name(), group.topic().quotaBytes());
      }
      Map<Integer, List<ConsumerSettings>> byShard = new TreeMap<>();
      for (ConsumerSettings consumer : group.consumers()) {
        String namespace = consumer.admission().namespace();
        limit(limits, "n:" + namespace, quotas.namespace(namespace));
        byShard.computeIfAbsent(shardOf(consumer.name()), s -> new ArrayList<>()).add(consumer);
      }
      int index = g;
      byShard.forEach((shard, consumers) -> {
        parts.computeIfAbsent(shard, s -> new ArrayList<>()).add(new Group(group.topic(), consumers, group.sizes()));
        partOf.computeIfAbsent(shard, s -> new ArrayList<>()).add(index);
      });
    }
    Map<Integer, Future<List<Verdict>>> judged = new TreeMap<>();
    parts.forEach((shard, part) -> judged.put(shard, reserveIn(store, shard, holdId, part, limits)));
    return Future.all(new ArrayList<>(judged.values())).map(all -> {
      // an event refused for all in any shard is refused; the skipping consumers of every shard skip it
      List<List<Verdict>> merged = new ArrayList<>();
      groups.forEach(group -> merged.add(new ArrayList<>(Collections.nCopies(group.sizes().size(), Verdict.ADMITTED))));
      judged.forEach((shard, verdicts) -> {
        int next = 0;
        for (int g : partOf.get(shard)) {
          List<Verdict> events = merged.get(g);
          for (int e = 0; e < events.size(); e++) {
            events.set(e, events.get(e).and(verdicts.result().get(next++)));
          }
        }
      });
      return merged.stream().flatMap(List::stream).toList();
    });
  }

  private static void limit(Map<String, Long> limits, String scope, Long limit) {
    if (limit != null) {
      limits.put(scope, limit);
    }
  }

  /** Reserves in one shard: within its budgets, or, when they fall short, after asking the bank. */
  private Future<List<Verdict>> reserveIn(RedisStore store, int shard, String holdId, List<Group> groups,
      Map<String, Long> limits) {
    return reserveCall(store, shard, holdId, groups, shards() == 1 ? "one" : "try", Map.of()).compose(reply -> {
      if (reply.size() == 0 || !reply.get(0).toString().equals("SHORT")) {
        return Future.succeededFuture(verdicts(reply));
      }
      Map<String, Long> lacking = new LinkedHashMap<>();
      for (int i = 1; i + 1 < reply.size(); i += 2) {
        lacking.put(reply.get(i).toString(), reply.get(i + 1).toLong());
      }
      return budgets(store, shard, lacking, limits)
          .compose(grants -> reserveCall(store, shard, holdId, groups, "final", grants))
          .map(SpoolLedger::verdicts);
    });
  }

  private Future<Response> reserveCall(RedisStore store, int shard, String holdId, List<Group> groups, String mode,
      Map<String, Long> grants) {
    List<Object> args = new ArrayList<>(List.of(holdId, holdMs, quota(quotas.spoolBytes()), mode, grants.size()));
    grants.forEach((scope, granted) -> {
      args.add(scope);
      args.add(granted);
    });
    args.add(groups.size());
    for (Group group : groups) {
      TopicSettings topic = group.topic();
      args.add(topic.quotaBytes() == null ? "" : topic.name());
      args.add(quota(topic.quotaBytes()));
      args.add(group.consumers().size());
      for (ConsumerSettings consumer : group.consumers()) {
        ConsumerSettings.Admission admission = consumer.admission();
        args.addAll(List.of(consumer.name(), admission.rejectPublishWhenRefused() ? "1" : "0",
            admission.namespace() == null ? "" : admission.namespace(),
            quota(quotas.namespace(admission.namespace()))));
      }
      args.add(group.sizes().size());
      args.addAll(group.sizes());
    }
    return store.eval(Script.QUOTA_RESERVE, keys(shard), args);
  }

  private static List<Verdict> verdicts(Response reply) {
    List<Verdict> verdicts = new ArrayList<>(reply.size());
    reply.forEach(verdict -> verdicts.add(Verdict.parse(verdict.toString())));
    return verdicts;
  }

  /**
   * Takes room for up to {@code wanted} more unacked events of {@code consumer} under
   * maxUnackedTotal, held under {@code holdId} ("<id>:<consumer>") until {@link #settle} or the
   * poll's figures; the answer is how many the poll may hand out new.
   */
  public Future<Integer> takeUnacked(RedisStore store, String consumer, String holdId, int wanted) {
    int shard = shardOf(consumer);
    return takeUnackedCall(store, shard, holdId, wanted, shards() == 1 ? "one" : "try", null).compose(taken -> {
      if (taken >= 0) {
        return Future.succeededFuture(taken);
      }
      return budgets(store, shard, Map.of("u", (long) -taken), Map.of("u", quotas.maxUnackedTotal()))
          .compose(grants -> takeUnackedCall(store, shard, holdId, wanted, "final", grants.get("u")));
    });
  }

  private Future<Integer> takeUnackedCall(RedisStore store, int shard, String holdId, int wanted, String mode,
      Long granted) {
    return store.eval(Script.QUOTA_TAKE_UNACKED, keys(shard), List.of(holdId, holdMs, quotas.maxUnackedTotal(),
        wanted, mode, granted == null ? "" : granted)).map(Response::toInteger);
  }

  /**
   * Asks the bank for what {@code shard} lacks of each scope; for what the bank lacks too, has the
   * shards give back their unused budget first ({@link #released}), and asks again. The answer is
   * the shard's grants in all, for it to learn.
   */
  private Future<Map<String, Long>> budgets(RedisStore store, int shard, Map<String, Long> lacking,
      Map<String, Long> limits) {
    List<BankEntry> asks = new ArrayList<>();
    lacking.forEach((scope, amount) -> asks.add(BankEntry.ask(shard, scope, limits.get(scope), amount)));
    return bank(store, asks).compose(granted -> {
      Map<String, Long> grants = new ConcurrentHashMap<>();
      List<Future<Void>> again = new ArrayList<>();
      for (int i = 0; i < asks.size(); i++) {
        BankEntry ask = asks.get(i);
        grants.put(ask.scope(), granted.get(i)[0]);
        long unmet = ask.lacking() - granted.get(i)[1];
        if (unmet > 0) {
          // what the shard itself gave back meanwhile, it lacks again
          // a release that failed leaves the shard with what it has: the final judgement refuses
          again.add(released(store, ask.scope()).otherwise(Map.of()).compose(released -> {
            if (released.isEmpty()) {
              return Future.succeededFuture();
            }
            long asking = unmet + released.getOrDefault(shard, 0L);
            return bank(store, List.of(BankEntry.ask(shard, ask.scope(), ask.limit(), asking))).map(regranted -> {
              grants.put(ask.scope(), regranted.get(0)[0]);
              return null;
            });
          }));
        }
      }
      return Future.all(again).map(all -> grants);
    });
  }

  /** A scope's releases from this node: the one under way, and whether the last gave nothing back, when. */
  private static final class Releases {
    private Future<Map<Integer, Long>> underWay;
    private boolean fruitless;
    private long endedAt;
  }

  /**
   * Has every shard give back its unused budget of {@code scope}, and the bank hear of it; the answer
   * is what each shard gave back, by shard. Asks that come while a release is under way wait for that
   * one; for {@code releaseGapMs} after a release that gave nothing back, none is made (the answer is
   * then empty), so that rounds refused at a full limit do not each call every shard.
   */
  private Future<Map<Integer, Long>> released(RedisStore store, String scope) {
    Releases state = releases.computeIfAbsent(scope, s -> new Releases());
    Future<Map<Integer, Long>> shared;
    Promise<Map<Integer, Long>> mine = null;
    synchronized (state) {
      if (state.underWay == null && state.fruitless && System.currentTimeMillis() - state.endedAt < releaseGapMs) {
        return Future.succeededFuture(Map.of());
      }
      if (state.underWay == null) {
        mine = Promise.promise();
        state.underWay = mine.future();
      }
      shared = state.underWay;
    }
    if (mine != null) {
      Promise<Map<Integer, Long>> releasing = mine;
      Map<Integer, Map<String, long[]>> everyShard = new TreeMap<>();
      for (int shard = 0; shard < shards(); shard++) {
        everyShard.put(shard, Map.of(scope, UNKNOWN));
      }
      release(store, everyShard).onComplete(done -> {
        synchronized (state) {
          state.underWay = null;
          state.fruitless = done.failed() || done.result().getOrDefault(scope, Map.of()).values().stream()
              .allMatch(amount -> amount == 0);
          state.endedAt = System.currentTimeMillis();
        }
        if (done.succeeded()) {
          releasing.complete(done.result().getOrDefault(scope, Map.of()));
        } else {
          releasing.fail(done.cause());
        }
      });
    }
    // the release may be another verticle's: its end is handed back to this one's context
    Context context = Vertx.currentContext();
    if (context == null) {
      return shared;
    }
    Promise<Map<Integer, Long>> here = Promise.promise();
    shared.onComplete(done -> context.runOnContext(v -> here.handle(done)));
    return here.future();
  }

  /** Neither the bank's grant nor the returns it heard are known. */
  private static final long[] UNKNOWN = new long[0];

  /**
   * Has these shards give back their unused budget of these scopes, each first learning what the
   * bank heard of it (a {granted, returned} pair per scope, or {@link #UNKNOWN}), then tells the bank
   * what each has given back and learned in all. The answer is what was given back now, by scope and
   * shard.
   */
  private Future<Map<String, Map<Integer, Long>>> release(RedisStore store, Map<Integer, Map<String, long[]>> shards) {
    List<Future<List<long[]>>> calls = new ArrayList<>();
    List<BankEntry> told = new ArrayList<>();
    Map<String, Map<Integer, Long>> releasedNow = new TreeMap<>();
    shards.forEach((shard, scopes) -> {
      List<Object> args = new ArrayList<>();
      scopes.forEach((scope, heard) -> args.addAll(heard == UNKNOWN ? List.of(scope, "", "")
          : List.of(scope, heard[0], heard[1])));
      calls.add(store.eval(Script.QUOTA_RELEASE, keys(shard), args).map(reply -> {
        List<long[]> words = new ArrayList<>();
        reply.forEach(word -> words.add(new long[] {word.get(0).toLong(), word.get(1).toLong(), word.get(2).toLong()}));
        return words;
      }));
    });
    return Future.all(calls).compose(all -> {
      int call = 0;
      for (Map.Entry<Integer, Map<String, long[]>> shard : shards.entrySet()) {
        List<long[]> words = all.resultAt(call++);
        int i = 0;
        for (String scope : shard.getValue().keySet()) {
          long[] word = words.get(i++);
          told.add(BankEntry.told(shard.getKey(), scope, word[0], word[1]));
          releasedNow.computeIfAbsent(scope, s -> new TreeMap<>()).put(shard.getKey(), word[2]);
        }
      }
      return told.isEmpty() ? Future.succeededFuture(releasedNow) : bank(store, told).map(ok -> releasedNow);
    });
  }

  /**
   * Brings the bank and the shards to the same word on grants and returns, both ways: a node that
   * died between the two leaves budget idle (never doubled) until then, and a failover that lost a
   * write on either side is made up. Every shard gives back what it does not use as well, so that
   * budgets follow a lowered limit.
   */
  Future<Void> reconcile(RedisStore store) {
    if (shards() == 1) {
      return Future.succeededFuture();
    }
    return store.send(Request.cmd(Command.HGETALL).arg(Keys.LEDGER_BANK)).compose(bank -> {
      Map<Integer, Map<String, long[]>> heard = new TreeMap<>();
      for (String field : bank.getKeys()) {
        boolean granted = field.startsWith("granted:");
        if (granted || field.startsWith("returned:")) {
          int from = field.indexOf(':') + 1;
          int colon = field.indexOf(':', from);
          int shard = Integer.parseInt(field.substring(from, colon));
          if (shard < shards()) { // a bank of another shard count: those shards are not this ledger's
            long[] word = heard.computeIfAbsent(shard, s -> new TreeMap<>())
                .computeIfAbsent(field.substring(colon + 1), scope -> new long[2]);
            word[granted ? 0 : 1] = bank.get(field).toLong();
          }
        }
      }
      return heard.isEmpty() ? Future.succeededFuture() : release(store, heard).mapEmpty();
    });
  }

  /** One call of {@code quota_bank.lua}: per entry, {granted in all, granted now}. */
  private static Future<List<long[]>> bank(RedisStore store, List<BankEntry> entries) {
    List<Object> args = new ArrayList<>();
    entries.forEach(entry -> entry.addTo(args));
    return store.eval(Script.QUOTA_BANK, List.of(Keys.LEDGER_BANK), args).map(reply -> {
      List<long[]> granted = new ArrayList<>(reply.size());
      reply.forEach(entry -> granted.add(new long[] {entry.get(0).toLong(), entry.get(1).toLong()}));
      return granted;
    });
  }

  /**
   * One entry of a bank call: a shard's word on what it gave back of a scope and learned it was
   * granted, in all (each -1 when not told), and what it lacks (0 when it only tells).
   */
  private record BankEntry(int shard, String scope, Long limit, long returned, long learned, long lacking) {
    static BankEntry ask(int shard, String scope, Long limit, long lacking) {
      return new BankEntry(shard, scope, limit, -1, -1, lacking);
    }

    static BankEntry told(int shard, String scope, long returned, long learned) {
      return new BankEntry(shard, scope, null, returned, learned, 0);
    }

    void addTo(List<Object> args) {
      args.addAll(List.of(shard, scope, quota(limit), returned < 0 ? "" : returned, learned < 0 ? "" : learned, lacking,
          limit == null ? 0 : Math.max(1, limit / CHUNKS)));
    }
  }

  /**
   * Gives back the holds {@code holdIds} ("<id>:<consumer>") and brings the ledger up to date with
   * these consumers' figures, in their shards; announces room under maxUnackedTotal for polls held
   * back by it (on every node).
   */
  public Future<Void> settle(RedisStore store, Collection<String> holdIds, Collection<SpoolFigures> figures) {
    Map<Integer, List<String>> holds = new TreeMap<>();
    holdIds.forEach(hold -> holds.computeIfAbsent(shardOf(hold.substring(hold.indexOf(':') + 1)),
        s -> new ArrayList<>()).add(hold));
    Map<Integer, List<SpoolFigures>> figuresByShard = new TreeMap<>();
    figures.forEach(f -> figuresByShard.computeIfAbsent(shardOf(f.consumer()), s -> new ArrayList<>()).add(f));
    Set<Integer> touchedShards = new TreeSet<>(holds.keySet());
    touchedShards.addAll(figuresByShard.keySet());
    List<Future<Response>> calls = new ArrayList<>();
    for (int shard : touchedShards) {
      List<Object> args = new ArrayList<>(List.of(String.join(" ", holds.getOrDefault(shard, List.of())),
          quota(quotas.maxUnackedTotal()), shards() == 1 ? "one" : "shards"));
      figuresByShard.getOrDefault(shard, List.of()).forEach(f -> args.addAll(f.args()));
      calls.add(store.eval(Script.QUOTA_SETTLE, keys(shard), args));
    }
    return Future.all(calls).compose(all -> {
      forgetRealized(store, figures);
      boolean room = all.<Response>list().stream().anyMatch(reply -> reply.toInteger() == 1);
      return room ? store.send(Request.cmd(Command.PUBLISH).arg(Keys.ROOM_CHANNEL).arg("")).mapEmpty()
          : Future.succeededFuture();
    });
  }

  /** The ledger knows now: the consumers need not list these holds any more (best effort: they lapse). */
  private static void forgetRealized(RedisStore store, Collection<SpoolFigures> figures) {
    for (SpoolFigures f : figures) {
      if (!f.realized().isEmpty()) {
        Request forget = Request.cmd(Command.ZREM).arg(Keys.realized(f.consumer()));
        f.realized().forEach(forget::arg);
        store.send(forget).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG,
            "Could not forget realized holds of " + f.consumer() + ": " + failure.getMessage()));
      }
    }
  }

  /** Every shard's usage hash, in shard order. */
  public Future<List<Response>> usage(RedisStore store) {
    List<Future<Response>> reads = new ArrayList<>();
    for (int shard = 0; shard < shards(); shard++) {
      reads.add(store.send(Request.cmd(Command.HGETALL).arg(keys(shard).get(0))));
    }
    return Future.all(reads).map(all -> all.<Response>list());
  }

  /**
   * Raises or clears the spool and unacked alerts from the sums over the shards (the first shard
   * keeps their state, so one node announces each change), and announces them. Only reads unless a
   * change is due.
   */
  Future<Void> checkAlerts(RedisStore store) {
    if (quotas.spoolBytes() == null && quotas.maxUnackedTotal() == null) {
      return Future.succeededFuture();
    }
    List<Future<Response>> reads = new ArrayList<>();
    for (int shard = 0; shard < shards(); shard++) {
      Request read = Request.cmd(Command.HMGET).arg(keys(shard).get(0)).arg("g").arg("u");
      reads.add(store.send(shard == 0 ? read.arg("alert:spool").arg("alert:unacked") : read));
    }
    return Future.all(reads).compose(all -> {
      long spooled = 0;
      long unacked = 0;
      for (Response read : all.<Response>list()) {
        spooled += read.get(0) == null ? 0 : read.get(0).toLong();
        unacked += read.get(1) == null ? 0 : read.get(1).toLong();
      }
      Response first = all.resultAt(0);
      if (!alertDue(first.get(2) != null, spooled, quotas.spoolBytes())
          && !alertDue(first.get(3) != null, unacked, quotas.maxUnackedTotal())) {
        return Future.succeededFuture();
      }
      long spool = spooled;
      long out = unacked;
      return store.eval(Script.QUOTA_ALERT, keys(0), List.of(quotas.raisePercent(), quotas.clearPercent(),
          "spool", spool, quota(quotas.spoolBytes()), "unacked", out, quota(quotas.maxUnackedTotal()))).map(states -> {
            alert("spool", states.get(0).toString(), spool, quotas.spoolBytes(), "bytes");
            alert("unacked", states.get(1).toString(), out, quotas.maxUnackedTotal(), "events");
            return null;
          });
    });
  }

  /** Whether an alert is to be raised or cleared (as {@code quota_alert.lua} judges). */
  private boolean alertDue(boolean raised, long used, Long limit) {
    if (raised) {
      return limit == null || used * 100 < limit * quotas.clearPercent();
    }
    return limit != null && used * 100 >= limit * quotas.raisePercent();
  }

  /** Logs and publishes (on {@code $sys/alerts/<name>}) a raised or cleared alert. */
  private void alert(String name, String state, long used, Long limit, String unit) {
    if (state.isEmpty()) {
      return;
    }
    JsonObject alert = new JsonObject().put("alert", name).put("state", state).put("used", used).put("limit", limit)
        .put("unit", unit).put("raisePercent", quotas.raisePercent()).put("clearPercent", quotas.clearPercent());
    LOG.log(state.equals("RAISED") ? System.Logger.Level.WARNING : System.Logger.Level.INFO,
        "Alert " + name + " " + state + ": " + used + " of " + limit + " " + unit + " in use");
    vertx.eventBus().send(Addresses.ALERTS, new JsonObject().put("topic", ALERT_TOPICS + name).put("payload", alert));
  }

  private static Object quota(Long quota) {
    return quota == null ? "" : quota;
  }

  /**
   * What the ledger said of one event.
   *
   * @param refusal  why it is refused for every consumer, or null
   * @param skipping consumers that do not take it (they let publishers through when refusing)
   */
  public record Verdict(ApiException refusal, Set<String> skipping) {
    static final Verdict ADMITTED = new Verdict(null, Set.of());

    /** This verdict and another shard's on the same event: a refusal stands, the skipping add up. */
    Verdict and(Verdict other) {
      if (refusal != null || other.refusal != null) {
        return refusal != null ? this : other;
      }
      if (other.skipping.isEmpty()) {
        return this;
      }
      Set<String> both = new HashSet<>(skipping);
      both.addAll(other.skipping);
      return new Verdict(null, both);
    }

    /** Reads {@code quota_reserve.lua}'s words: '', 'R scope name' or 'S consumer ...'. */
    static Verdict parse(String text) {
      if (text.isEmpty()) {
        return ADMITTED;
      }
      List<String> words = List.of(text.split(" "));
      if (words.get(0).equals("S")) {
        return new Verdict(null, Set.copyOf(words.subList(1, words.size())));
      }
      String scope = words.get(1);
      JsonObject details = new JsonObject().put("scope", scope);
      String message = "The gateway's spool quota would be exceeded";
      if (!scope.equals("gateway")) {
        details.put(scope, words.get(2));
        message = "The spool quota of " + scope + " '" + words.get(2) + "' would be exceeded";
      }
      return new Verdict(new ApiException(ErrorCode.QUOTA_EXCEEDED, message, details), Set.of());
    }
  }
}
