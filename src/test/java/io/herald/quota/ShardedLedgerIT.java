package io.herald.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerSettings;
import io.herald.store.HashSlots;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.testing.TestRedis;
import io.herald.topic.TopicSettings;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ledger's shards and their bank, as on a Redis Cluster, driven step by step on one server (the
 * keys are the cluster's, each shard's in a slot of its own): budgets move to the shard that needs
 * them, a limit is never overshot, and a transfer cut half-way idles budget, never doubles it.
 */
@Timeout(60)
class ShardedLedgerIT {
  private static final int SHARDS = SpoolLedger.CLUSTER_SHARDS;
  private static final long LIMIT = 10_000;

  private TestRedis redis;
  private Vertx vertx;
  private RedisStore store;

  @BeforeEach
  void open() {
    redis = TestRedis.start();
    vertx = Vertx.vertx();
    store = RedisStore.pipelined(vertx, redis.url(), 5000);
  }

  @AfterEach
  void close() {
    store.close().await();
    vertx.close().await();
    redis.close();
  }

  /** A ledger of 16 shards; the shards give back unused budget whenever one lacks it (no gap). */
  private SpoolLedger ledger(Long spoolBytes, Long maxUnackedTotal) {
    return new SpoolLedger(vertx, new HeraldConfig.Quotas(spoolBytes, Map.of(), 80, 60, 60_000, maxUnackedTotal),
        5000, SHARDS, 0);
  }

  /** {@code count} consumer names, each in a shard of its own. */
  private static List<String> inDistinctShards(SpoolLedger ledger, int count) {
    List<String> names = new ArrayList<>();
    Set<Integer> shards = new HashSet<>();
    for (int i = 0; names.size() < count; i++) {
      String name = "sharded-" + i;
      if (shards.add(ledger.shardOf(name))) {
        names.add(name);
      }
    }
    return names;
  }

  private static ConsumerSettings consumer(String name) {
    return ConsumerSettings.parse(name, new JsonObject().put("topics", new JsonArray().add("t")));
  }

  /** Reserves {@code events} events of {@code size} bytes for one consumer; answers how many were admitted. */
  private static long reserve(SpoolLedger ledger, RedisStore store, String hold, String consumer, int events, int size) {
    List<SpoolLedger.Verdict> verdicts = ledger.reserve(store, hold, List.of(new SpoolLedger.Group(
        TopicSettings.defaults("t"), List.of(consumer(consumer)), Collections.nCopies(events, size)))).await();
    assertEquals(events, verdicts.size());
    return verdicts.stream().filter(v -> v.refusal() == null).count();
  }

  private long field(String key, String field) {
    Response value = store.send(Request.cmd(Command.HGET).arg(key).arg(field)).await();
    return value == null ? 0 : value.toLong();
  }

  /** What the shards hold of a scope, summed. */
  private long used(SpoolLedger ledger, String scope) {
    long used = 0;
    for (int shard = 0; shard < SHARDS; shard++) {
      used += field(ledger.keys(shard).get(0), scope);
    }
    return used;
  }

  /** The budgets the shards believe they have of a scope, summed. */
  private long budgets(SpoolLedger ledger, String scope) {
    long budgets = 0;
    for (int shard = 0; shard < SHARDS; shard++) {
      String key = ledger.keys(shard).get(4);
      budgets += field(key, scope + ":granted") - field(key, scope + ":returned");
    }
    return budgets;
  }

  private long leased(String scope) {
    return field(Keys.LEDGER_BANK, "leased:" + scope);
  }

  @Test
  @DisplayName("each shard's keys lie in a slot range of their own, so the shards spread over a cluster's primaries; a consumer's shard lies in its own slot's range")
  void shardsSpreadOverTheSlots() {
    SpoolLedger ledger = ledger(LIMIT, null);
    Set<Integer> sixteenths = new HashSet<>();
    for (int shard = 0; shard < SHARDS; shard++) {
      List<String> keys = ledger.keys(shard);
      int slot = HashSlots.of(keys.get(0).getBytes(StandardCharsets.UTF_8));
      for (String key : keys) {
        assertEquals(slot, HashSlots.of(key.getBytes(StandardCharsets.UTF_8)), key);
      }
      sixteenths.add(slot * SHARDS / HashSlots.COUNT);
    }
    assertEquals(SHARDS, sixteenths.size());
    for (int i = 0; i < 100; i++) {
      String consumer = "placed-" + i;
      int own = HashSlots.of(Keys.consumer(consumer).get(0).getBytes(StandardCharsets.UTF_8));
      int shardSlot = HashSlots.of(ledger.keys(ledger.shardOf(consumer)).get(0).getBytes(StandardCharsets.UTF_8));
      assertEquals(own * SHARDS / HashSlots.COUNT, shardSlot * SHARDS / HashSlots.COUNT, consumer);
    }
  }

  @Test
  @DisplayName("budgets go where the publishes are: shards never hold more than the limit together, and the last room goes to the shard that asks")
  void budgetsMoveToTheShardThatNeedsThem() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 3);
    assertEquals(60, reserve(ledger, store, "r1", names.get(0), 60, 100));
    assertEquals(40, reserve(ledger, store, "r2", names.get(1), 40, 100));
    // the whole limit is held: a third shard is refused, with the gateway as the reason
    List<SpoolLedger.Verdict> refused = ledger.reserve(store, "r3", List.of(new SpoolLedger.Group(
        TopicSettings.defaults("t"), List.of(consumer(names.get(2))), List.of(100)))).await();
    assertEquals("gateway", refused.get(0).refusal().details().getString("scope"));
    assertEquals(LIMIT, used(ledger, "g"));
    assertTrue(budgets(ledger, "g") <= LIMIT && leased("g") <= LIMIT, budgets(ledger, "g") + " / " + leased("g"));

    // the first consumer's events are gone (its hold given back, its figures say nothing is spooled):
    // its shard keeps the budget unused until another shard lacks it
    ledger.settle(store, List.of("r1:" + names.get(0)), List.of()).await();
    assertEquals(LIMIT - 6_000, used(ledger, "g"));
    assertEquals(50, reserve(ledger, store, "r4", names.get(2), 50, 100));
    assertEquals(10, reserve(ledger, store, "r5", names.get(2), 20, 100), "only the 10 more that the limit leaves");
    assertEquals(LIMIT, used(ledger, "g"));
    assertTrue(budgets(ledger, "g") <= LIMIT && leased("g") <= LIMIT, budgets(ledger, "g") + " / " + leased("g"));
  }

  @Test
  @DisplayName("publish rounds racing on many shards never overshoot the limit together, and use nearly all of it")
  void racingShardsNeverOvershoot() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 8);
    List<Future<List<SpoolLedger.Verdict>>> rounds = new ArrayList<>();
    for (int round = 0; round < 40; round++) {
      // each round: 3 events for two consumers in different shards
      List<ConsumerSettings> two = List.of(consumer(names.get(round % 8)), consumer(names.get((round + 3) % 8)));
      rounds.add(ledger.reserve(store, "race" + round, List.of(new SpoolLedger.Group(TopicSettings.defaults("t"), two,
          List.of(50, 50, 50)))));
    }
    Future.all(rounds).await();
    long admitted = rounds.stream().flatMap(r -> r.result().stream()).filter(v -> v.refusal() == null).count();
    long used = used(ledger, "g");
    // an event one shard refused for all is held by the other until its round settles
    assertTrue(admitted * 100 <= used, admitted + " events admitted, " + used + " held");
    assertTrue(used <= LIMIT, "used " + used);
    assertTrue(admitted < 120, "some were refused: " + admitted);
    assertTrue(used >= LIMIT * 9 / 10, "used " + used);
    assertTrue(budgets(ledger, "g") <= LIMIT && leased("g") <= LIMIT, budgets(ledger, "g") + " / " + leased("g"));
  }

  @Test
  @DisplayName("a grant whose shard never heard of it (its node died) idles budget until a reconciliation gives it back to the bank; hearing of it late or twice adds nothing")
  void aGrantCutHalfWayIsMadeUp() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 2);
    int lost = ledger.shardOf(names.get(0));
    // the bank grants 5,000 to the first consumer's shard, and the node dies before telling the shard
    Response granted = store.eval(Script.QUOTA_BANK, List.of(Keys.LEDGER_BANK),
        List.of(lost, "g", LIMIT, "", "", 5_000, 156)).await();
    assertEquals(5_000, granted.get(0).get(1).toLong());

    // the other shard can get only what the bank has left: the lost grant is idle, not doubled
    assertEquals(50, reserve(ledger, store, "r1", names.get(1), 60, 100));
    assertEquals(LIMIT, leased("g"));
    assertEquals(5_000, budgets(ledger, "g"));

    // a reconciliation tells the shard, which gives it back, unused, for the bank to grant again
    ledger.reconcile(store).await();
    assertEquals(5_000, leased("g"));
    assertEquals(5_000, budgets(ledger, "g"));
    assertEquals(10, reserve(ledger, store, "r2", names.get(1), 10, 100));
    assertEquals(6_000, used(ledger, "g"));

    // the dead node's word arriving now, or a second reconciliation, changes nothing
    store.eval(Script.QUOTA_RELEASE, ledger.keys(lost), List.of("g", 5_000, "")).await();
    ledger.reconcile(store).await();
    assertTrue(budgets(ledger, "g") <= LIMIT, "budgets " + budgets(ledger, "g"));
    assertTrue(leased("g") <= LIMIT, "leased " + leased("g"));
    assertEquals(40, reserve(ledger, store, "r3", names.get(0), 100, 100), "the 4,000 the bank has left, no more");
    assertEquals(LIMIT, used(ledger, "g"));
  }

  @Test
  @DisplayName("budget a shard gave back that the bank never heard of idles until a reconciliation tells the bank")
  void aReturnCutHalfWayIsMadeUp() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 2);
    assertEquals(100, reserve(ledger, store, "r1", names.get(0), 100, 100));
    ledger.settle(store, List.of("r1:" + names.get(0)), List.of()).await();
    // the shard gives back its unused 10,000, and the node dies before telling the bank
    int shard = ledger.shardOf(names.get(0));
    Response returned = store.eval(Script.QUOTA_RELEASE, ledger.keys(shard), List.of("g", "", "")).await();
    assertEquals(LIMIT, returned.get(0).get(0).toLong());
    assertEquals(0, budgets(ledger, "g"));
    assertEquals(LIMIT, leased("g"), "the bank still counts it as lent");

    ledger.reconcile(store).await();
    assertEquals(0, leased("g"));
    assertEquals(100, reserve(ledger, store, "r2", names.get(1), 100, 100));
  }

  @Test
  @DisplayName("maxUnackedTotal on shards: polls of two shards get room in turn, never more than the limit together")
  void unackedRoomMovesBetweenShards() {
    SpoolLedger ledger = ledger(null, 20L);
    List<String> names = inDistinctShards(ledger, 2);
    assertEquals(15, ledger.takeUnacked(store, names.get(0), "p1:" + names.get(0), 15).await());
    assertEquals(5, ledger.takeUnacked(store, names.get(1), "p2:" + names.get(1), 10).await());
    assertEquals(0, ledger.takeUnacked(store, names.get(1), "p3:" + names.get(1), 10).await());
    assertEquals(20, used(ledger, "u"));
    // the first poll handed out nothing (its figures say so): its room goes to the other shard
    ledger.settle(store, List.of("p1:" + names.get(0)), List.of()).await();
    assertEquals(10, ledger.takeUnacked(store, names.get(1), "p4:" + names.get(1), 10).await());
    assertEquals(15, used(ledger, "u"));
    assertTrue(budgets(ledger, "u") <= 20 && leased("u") <= 20, budgets(ledger, "u") + " / " + leased("u"));
    assertNull(store.send(Request.cmd(Command.HGET).arg(Keys.ledger(0, 1).get(0)).arg("u")).await(),
        "the ledger of one shard is not used");
    assertNotEquals(Keys.ledger(0, 1).get(0), ledger.keys(0).get(0));
  }

  @Test
  @DisplayName("a failover that loses a shard's return or the bank's grant is made up by the next reconciliation, never leaving budget counted twice")
  void aFailoverThatLosesAWriteIsMadeUp() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 2);
    int first = ledger.shardOf(names.get(0));
    assertEquals(100, reserve(ledger, store, "r1", names.get(0), 100, 100));
    ledger.settle(store, List.of("r1:" + names.get(0)), List.of()).await();
    ledger.reconcile(store).await();
    assertEquals(0, leased("g"), "its unused 10,000 went back to the bank");
    // the shard's primary fails over and its replica had not yet taken the return: the shard
    // believes it holds 10,000 again, which the bank may lend to the other shard as well
    store.send(Request.cmd(Command.HDEL).arg(ledger.keys(first).get(4)).arg("g:returned")).await();
    assertEquals(LIMIT, budgets(ledger, "g"));
    ledger.reconcile(store).await();
    assertEquals(0, budgets(ledger, "g"), "the shard learned what the bank heard it gave back");
    assertEquals(100, reserve(ledger, store, "r2", names.get(1), 100, 100));

    // the bank's primary fails over and loses the grant it made: the next reconciliation tells it
    store.send(Request.cmd(Command.HSET).arg(Keys.LEDGER_BANK).arg("granted:" + ledger.shardOf(names.get(1)) + ":g")
        .arg(0)).await();
    store.send(Request.cmd(Command.HSET).arg(Keys.LEDGER_BANK).arg("leased:g").arg(0)).await();
    ledger.reconcile(store).await();
    assertEquals(LIMIT, leased("g"));
    assertEquals(0, reserve(ledger, store, "r3", names.get(0), 1, 100), "the limit is held by the other shard");
    assertTrue(used(ledger, "g") <= LIMIT);
  }

  @Test
  @DisplayName("a limit lowered below a shard's budget holds at once: a shard never admits beyond the limit it is given")
  void aLoweredLimitHoldsAtOnce() {
    SpoolLedger ledger = ledger(LIMIT, null);
    List<String> names = inDistinctShards(ledger, 1);
    assertEquals(50, reserve(ledger, store, "r1", names.get(0), 50, 100));
    ledger.settle(store, List.of("r1:" + names.get(0)), List.of()).await();
    // the shard keeps its 5,000 unused; the limit is then lowered to 1,500
    SpoolLedger lowered = ledger(1_500L, null);
    assertEquals(15, reserve(lowered, store, "r2", names.get(0), 20, 100));
    assertEquals(1_500, used(lowered, "g"));
    assertTrue(leased("g") <= 1_500, "leased " + leased("g"));
  }

  @Test
  @DisplayName("rounds refused at a full limit do not each have every shard give back: after a release that gave nothing, none for a while")
  void fruitlessReleasesAreNotRepeated() {
    SpoolLedger ledger = new SpoolLedger(vertx, new HeraldConfig.Quotas(LIMIT, Map.of(), 80, 60, 60_000, null),
        5000, SHARDS, 60_000);
    List<String> names = inDistinctShards(ledger, 2);
    assertEquals(100, reserve(ledger, store, "r1", names.get(0), 100, 100));
    long before = scriptCalls();
    assertEquals(0, reserve(ledger, store, "r2", names.get(1), 1, 100));
    long refusedFirst = scriptCalls() - before;
    assertTrue(refusedFirst > SHARDS, "the first refusal had every shard give back: " + refusedFirst + " script calls");
    before = scriptCalls();
    assertEquals(0, reserve(ledger, store, "r3", names.get(1), 1, 100));
    assertEquals(0, reserve(ledger, store, "r4", names.get(1), 1, 100));
    // try, bank, final: no shard asked to give back
    assertEquals(6, scriptCalls() - before);
  }

  @Test
  @DisplayName("shards that lack budget at the same time share one release of the unused budget elsewhere: neither is refused")
  void concurrentAsksShareARelease() {
    SpoolLedger ledger = new SpoolLedger(vertx, new HeraldConfig.Quotas(LIMIT, Map.of(), 80, 60, 60_000, null),
        5000, SHARDS, 60_000);
    List<String> names = inDistinctShards(ledger, 3);
    assertEquals(100, reserve(ledger, store, "r1", names.get(0), 100, 100));
    ledger.settle(store, List.of("r1:" + names.get(0)), List.of()).await();
    List<Future<List<SpoolLedger.Verdict>>> both = new ArrayList<>();
    for (String name : names.subList(1, 3)) {
      both.add(ledger.reserve(store, "r2", List.of(new SpoolLedger.Group(TopicSettings.defaults("t"),
          List.of(consumer(name)), List.of(3_000)))));
    }
    Future.all(both).await();
    for (Future<List<SpoolLedger.Verdict>> verdicts : both) {
      assertNull(verdicts.result().get(0).refusal());
    }
    assertEquals(6_000, used(ledger, "g"));
  }

  /** How many script calls this Redis ran (Redis 7 counts failed ones apart). */
  private long scriptCalls() {
    String info = store.send(Request.cmd(Command.INFO).arg("commandstats")).await().toString();
    long calls = 0;
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("cmdstat_eval")) {
        // an EVALSHA Redis did not know yet fails (NOSCRIPT) and is sent again as EVAL
        calls += Long.parseLong(line.replaceAll(".*:calls=(\\d+),.*", "$1"))
            - Long.parseLong(line.replaceAll(".*failed_calls=(\\d+).*", "$1"));
      }
    }
    return calls;
  }
}
