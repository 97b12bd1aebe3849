package io.herald.store;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Builds every Redis key Herald uses. All keys of one consumer share the hash tag {@code {c:<name>}}
 * so that each per-consumer script touches a single Redis Cluster slot.
 */
public final class Keys {
  /** HASH consumer name → settings JSON: the list every node loads. */
  public static final String CONSUMERS = "herald:consumers";
  /** ZSET consumer name → the time its scheduler work is next due (the index in one piece). */
  public static final String DUE = "herald:{sched}:due";
  /** HASH consumer name → version, bumped whenever the due time is lowered. */
  public static final String DUE_VERSIONS = "herald:{sched}:versions";
  /** Pub/sub channel: "consumer blockMs", published when a consumer goes over its rate limit. */
  public static final String THROTTLE_CHANNEL = "herald:throttle";
  /** Pub/sub channel: published when polls held back by maxUnackedTotal may go on. */
  public static final String ROOM_CHANNEL = "herald:room";
  /** HASH topic name → settings JSON, for topics with settings of their own. */
  public static final String TOPICS = "herald:topics";
  /** Pub/sub channel: {@link #CONSUMER_CHANGED} or {@link #TOPIC_CHANGED} and a name, when settings changed. */
  public static final String ADMIN_CHANNEL = "herald:admin";
  public static final String CONSUMER_CHANGED = "consumer ";
  public static final String TOPIC_CHANGED = "topic ";

  /**
   * HASH: the spool ledger's bank on a Redis Cluster, which grants the ledger's shards their shares
   * of each gateway-wide limit ({@code quota_bank.lua}).
   */
  public static final String LEDGER_BANK = "herald:{quota}:bank";

  /** How many consumers' keys are kept made (beyond that the cache starts again). */
  private static final int CACHED_CONSUMERS = 65_536;
  private static final Map<String, List<String>> CONSUMER_KEYS = new ConcurrentHashMap<>();
  private static final Map<String, byte[]> KEY_BYTES = new ConcurrentHashMap<>();

  private Keys() {}

  /** The consumer whose keys {@code consumerKey} is one of. */
  public static String consumerOf(String consumerKey) {
    int start = consumerKey.indexOf("{c:") + 3;
    return consumerKey.substring(start, consumerKey.indexOf("}:", start));
  }

  /**
   * Pub/sub channel of one node: "waiterId consumer", published by {@code wake_waiter} in
   * {@code consumer.lib.lua} (which spells the prefix too) to wake that one parked poll.
   */
  public static String wakeChannel(String node) {
    return "herald:wake:" + node;
  }

  /**
   * Pub/sub channel a node subscribes to on every primary and that nobody publishes on: its
   * subscribers on a server tell {@code wake_waiter} that the node listens (see wakeups.lib.lua).
   */
  public static String aliveChannel(String node) {
    return "herald:alive:" + node;
  }

  /** The hash tag of the consumer's keys, as its slot is computed from it. */
  public static byte[] consumerTag(String consumer) {
    return ("c:" + consumer).getBytes(StandardCharsets.UTF_8);
  }

  private static String prefix(String consumer) {
    return "herald:{c:" + consumer + "}:";
  }

  /**
   * The keys every per-consumer script receives, in the order {@code consumer.lib.lua} names them.
   * Made once per consumer (every script call asks), with their bytes (see {@link #bytes}).
   */
  public static List<String> consumer(String consumer) {
    List<String> keys = CONSUMER_KEYS.get(consumer);
    if (keys == null) {
      if (CONSUMER_KEYS.size() >= CACHED_CONSUMERS) {
        CONSUMER_KEYS.clear();
        KEY_BYTES.clear();
      }
      String p = prefix(consumer);
      keys = List.of(p + "meta", p + "arrivals", p + "events", p + "expiry", waiters(consumer),
          p + "pending", p + "stale", p + "deliveries", p + "first", p + "polls", p + "scheduled", p + "dead",
          p + "errors", p + "failures", p + "reasons", p + "ttl", p + "charged", p + "topicBytes", realized(consumer),
          p + "gone", p + "delayed", p + "holders", p + "keyof", p + "behind", p + "ready", p + "memory",
          p + "forgets", p + "copies", p + "freed");
      keys.forEach(key -> KEY_BYTES.put(key, key.getBytes(StandardCharsets.UTF_8)));
      CONSUMER_KEYS.put(consumer, keys);
    }
    return keys;
  }

  /** A key's bytes, as a request carries it: made once for the consumers' keys. */
  public static byte[] bytes(String key) {
    byte[] bytes = KEY_BYTES.get(key);
    return bytes != null ? bytes : key.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The keys of {@code history.lua}: the consumer's, then the event's history as versions before
   * 0.9.0 kept it, a list of its own (now a field of the consumer's memory hash).
   */
  public static List<String> history(String consumer, String eventId) {
    List<String> keys = new ArrayList<>(consumer(consumer));
    keys.add(prefix(consumer) + "history:" + eventId);
    return keys;
  }

  /** The consumer's backlog as 0.6.0 kept it (a sorted set), for {@code backlog_upgrade.lua}. */
  public static String legacyBacklog(String consumer) {
    return prefix(consumer) + "backlog";
  }

  /** The ledger holds the consumer's scripts realized (KEYS[19] of the per-consumer scripts). */
  public static String realized(String consumer) {
    return prefix(consumer) + "realized";
  }

  /**
   * The due index's keys, {@link #DUE} and {@link #DUE_VERSIONS}, of shard {@code shard} of
   * {@code shards}: when there are several, {@code herald:{sched:<shard>:<n>}:...}, n chosen
   * so that the shards spread over the slots (see {@code spreadTag}).
   */
  public static List<String> due(int shard, int shards) {
    if (shards == 1) {
      return List.of(DUE, DUE_VERSIONS);
    }
    String tag = spreadTag("sched", shard, shards);
    return List.of("herald:{" + tag + "}:due", "herald:{" + tag + "}:versions");
  }

  /**
   * The keys of shard {@code shard} of {@code shards} of the spool ledger, in the order
   * {@code ledger.lib.lua} names them: usage, synced, holds, holdEnds, budgets. One shard keeps the
   * keys under {@code {quota}}, as before the ledger had shards; several spread like {@link #due}.
   */
  public static List<String> ledger(int shard, int shards) {
    String tag = shards == 1 ? "quota" : spreadTag("quota", shard, shards);
    String p = "herald:{" + tag + "}:";
    return List.of(p + "usage", p + "synced", p + "holds", p + "holdEnds", p + "budgets");
  }

  /**
   * {@code <name>:<shard>:<n>}, n the first number that puts the tag's slot in the shard's own nth
   * of the 16384 slots, so that shards spread evenly over a cluster's primaries (whose slot ranges
   * are about even) whatever their names hash to. Every node finds the same n.
   */
  private static String spreadTag(String name, int shard, int shards) {
    int from = shard * HashSlots.COUNT / shards;
    int to = (shard + 1) * HashSlots.COUNT / shards;
    for (int n = 0; ; n++) {
      String tag = name + ":" + shard + ":" + n;
      int slot = HashSlots.of(tag.getBytes(StandardCharsets.UTF_8));
      if (slot >= from && slot < to) {
        return tag;
      }
    }
  }

  /**
   * The keys of {@code publish.lua} and {@code consumer_delete.lua}: the consumer's, then the
   * eventIds spooled for it with an idempotencyKey during the dedup window.
   */
  public static List<String> spool(String consumer) {
    List<String> keys = new ArrayList<>(consumer(consumer));
    keys.add(prefix(consumer) + "idempotent");
    return keys;
  }

  /** The consumer's set of parked long polls (KEYS[5] of the per-consumer scripts). */
  public static String waiters(String consumer) {
    return prefix(consumer) + "waiters";
  }

  /** Where a deleted consumer's copies wait to be released (consumer_delete.lua). */
  public static String leaving(String consumer) {
    return prefix(consumer) + "leaving";
  }

  /** The hash of the stored copies the consumer holds events of, with how many (KEYS[28]). */
  public static String copiesHeld(String consumer) {
    return prefix(consumer) + "copies";
  }

  /** The stored copy of a round's events (docs/internals.md), in a slot of its own. */
  public static String copy(String copyId) {
    return "herald:{p:" + copyId + "}";
  }

  /** Which layout new events are spooled in: absent or {@code inline}, {@code shared} or {@code packed}. */
  public static final String LAYOUT = "herald:layout";

  /** The claim of an idempotency key on a topic (one hash slot per topic). */
  public static String idempotency(String topic, String idempotencyKey) {
    return "herald:{t:" + topic + "}:idem:" + idempotencyKey;
  }

  /**
   * The key holding the ackIds of one batch, named by its batchAckId's first 32 hex digits (the
   * random part; poll batchAckIds end with the batch's size, see {@code PollService}).
   */
  public static String batch(String consumer, String batchAckId) {
    return prefix(consumer) + "batch:" + batchAckId.substring(0, Math.min(32, batchAckId.length()));
  }
}
