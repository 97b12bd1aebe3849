package io.herald.store;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * A Lua script from {@code src/main/resources/lua}, called by SHA and loaded again when Redis forgot
 * it. The per-consumer scripts are also one function library ({@link #LIBRARY}): on Redis 7 and
 * later they are called as its functions, so that the library they share is defined once, not at
 * every call (that costs ~40 us of Redis CPU a call on a 2-core machine).
 */
public final class Script {
  /** Every script starts with it: {@code now_ms}, Redis' clock. */
  private static final String TIME_LIB = read("time.lib.lua");
  /**
   * The per-consumer library, one part per structure, in this order: each uses only what the parts
   * before it define (Lua locals), and begin_call, last, resets what all of them gather.
   */
  static final List<String> LIBRARY_PARTS = List.of("consumer", "history", "keylines", "copies", "backlog", "acks",
      "batches", "spool", "failures", "deliveries", "wakeups", "settle", "begin");
  private static final String CONSUMER_LIB = String.join("\n",
      LIBRARY_PARTS.stream().map(part -> read(part + ".lib.lua")).toList());
  private static final List<Script> PER_CONSUMER = new ArrayList<>();
  private static final List<Script> ALL = new ArrayList<>();

  /** Its answer tells a client that its writes are done: with redis.waitReplicas it waits for replicas. */
  private static final boolean CONFIRMED = true;
  private static final boolean UNCONFIRMED = false;

  public static final Script PUBLISH = perConsumer("publish", true, Writes.GROWS, CONFIRMED);
  public static final Script RETRACT = perConsumer("retract", true, Writes.FREES, CONFIRMED);
  public static final Script OWN_HOLD = perConsumer("own_hold", false, Writes.GROWS, UNCONFIRMED);
  public static final Script OWN_RELEASE = perConsumer("own_release", false, Writes.FREES, UNCONFIRMED);
  public static final Script POLL = perConsumer("poll", true, Writes.FREES, UNCONFIRMED);
  public static final Script ACK = perConsumer("ack", true, Writes.FREES, CONFIRMED);
  public static final Script REDELIVER = perConsumer("redeliver", true, Writes.FREES, UNCONFIRMED);
  public static final Script METADATA = perConsumer("metadata", false, Writes.READS, UNCONFIRMED);
  public static final Script RELEASE = perConsumer("release", true, Writes.FREES, UNCONFIRMED);
  /** Writes a few bytes (see file_window), so that a full window hears of settlements under OOM too. */
  public static final Script STILL_OUT = perConsumer("still_out", false, Writes.FREES, UNCONFIRMED);
  public static final Script WAKE_NEXT = perConsumer("wake_next", false, Writes.FREES, UNCONFIRMED);
  public static final Script ADMIT = perConsumer("admit", false, Writes.FREES, UNCONFIRMED);
  public static final Script NACK = perConsumer("nack", true, Writes.FREES, CONFIRMED);
  public static final Script EXTEND = perConsumer("extend", false, Writes.FREES, CONFIRMED);
  public static final Script LOST_COPY = perConsumer("lost_copy", true, Writes.FREES, UNCONFIRMED);
  public static final Script FAILED_POLL = perConsumer("failed_poll", false, Writes.FREES, UNCONFIRMED);
  public static final Script FAILED_ACK = perConsumer("failed_ack", false, Writes.FREES, CONFIRMED);
  public static final Script REDRIVE = perConsumer("redrive", true, Writes.GROWS, CONFIRMED);
  public static final Script FAILED_SIZES = perConsumer("failed_sizes", false, Writes.READS, UNCONFIRMED);
  public static final Script HISTORY = perConsumer("history", false, Writes.READS, UNCONFIRMED);
  public static final Script SPOOL_FIGURES = perConsumer("spool_figures", false, Writes.READS, UNCONFIRMED);
  public static final Script CONSUMER_PUT = perConsumer("consumer_put", false, Writes.GROWS, CONFIRMED);
  public static final Script COPIES_COVERED = perConsumer("copies_covered", false, Writes.GROWS, CONFIRMED);
  public static final Script CONSUMER_DELETE = perConsumer("consumer_delete", true, Writes.FREES, CONFIRMED);
  public static final Script BACKLOG_UPGRADE = perConsumer("backlog_upgrade", false, Writes.GROWS, UNCONFIRMED);
  /** Reads many consumers' keys in one call (see RedisStore#evalReadingMany), no KEYS of its own. */
  public static final Script CONSUMER_GAUGES = perConsumer("consumer_gauges", false, Writes.READS_MANY, UNCONFIRMED);
  public static final Script DUE_LOWER = standalone("due_lower");
  public static final Script DUE_UPDATE = standalone("due_update");
  public static final Script DUE_LIST = standalone("due_list");
  /** Confirmed: a claim a failover lost would let a retry store the event again under a new eventId. */
  public static final Script IDEM_CLAIM = standalone("idem_claim", CONFIRMED);
  public static final Script IDEM_SETTLE = standalone("idem_settle");
  /** Confirmed: a copy a failover lost would leave its consumers' stubs naming nothing. */
  public static final Script COPY_WRITE = standalone("copy_write", CONFIRMED);
  public static final Script COPY_RELEASE = standalone("copy_release");
  /** Confirmed: an expiry a failover lost would let a copy go before a holder of longer retention. */
  public static final Script COPY_EXTEND = standalone("copy_extend", CONFIRMED);
  public static final Script QUOTA_RESERVE = ledger("quota_reserve");
  public static final Script QUOTA_SETTLE = ledger("quota_settle");
  public static final Script QUOTA_TAKE_UNACKED = ledger("quota_take_unacked");
  public static final Script QUOTA_RELEASE = ledger("quota_release");
  public static final Script QUOTA_ALERT = ledger("quota_alert");
  public static final Script QUOTA_BANK = standalone("quota_bank");

  /** The per-consumer scripts as functions of one library, named by what it holds. */
  static final FunctionLibrary LIBRARY = new FunctionLibrary(TIME_LIB + "\n" + CONSUMER_LIB, PER_CONSUMER);

  /**
   * What a per-consumer script writes, which gives its function its flags: Redis refuses a
   * function that may write whenever it refuses writes (out of memory, a failed save, too few
   * replicas), so those that settle, take back or only bound what is held may run then, as EVAL
   * scripts could, and those that only read say so. One that reads many consumers' keys, of
   * several slots of its server, says that too.
   */
  enum Writes {
    READS("'no-writes'"), READS_MANY("'no-writes', 'allow-cross-slot-keys'"), FREES("'allow-oom'"), GROWS("");

    /** The function's flags, as the Lua list's items. */
    final String flags;

    Writes(String flags) {
      this.flags = flags;
    }
  }

  private final String name;
  private final Writes writes;
  /** The script's own text, without the libraries (for the function library). */
  private final String own;
  private final String body;
  private final String sha;
  private final boolean changesSpool;
  private final boolean confirmed;

  private Script(String name, String own, String body, boolean changesSpool, Writes writes, boolean confirmed) {
    this.name = name;
    this.confirmed = confirmed;
    this.writes = writes;
    this.own = own;
    this.body = body;
    this.sha = sha1(body);
    this.changesSpool = changesSpool;
    ALL.add(this);
  }

  /** Every script, for loading them where Redis has no functions. */
  static List<Script> all() {
    return List.copyOf(ALL);
  }

  /**
   * @param changesSpool whether it may change the consumer's spooled bytes or events
   * @param confirmed    whether its answer tells a client that its writes are done
   */
  private static Script perConsumer(String name, boolean changesSpool, Writes writes, boolean confirmed) {
    String own = read(name + ".lua");
    // the library's locals shadow KEYS and ARGV: the call's are taken before it
    Script script = new Script(name, own, TIME_LIB + "\nlocal CALL_KEYS, CALL_ARGV = KEYS, ARGV\n" + CONSUMER_LIB
        + "\nbegin_call(CALL_KEYS, CALL_ARGV)\n" + own, changesSpool, writes, confirmed);
    PER_CONSUMER.add(script);
    return script;
  }

  private static Script standalone(String name) {
    return standalone(name, UNCONFIRMED);
  }

  private static Script standalone(String name, boolean confirmed) {
    String own = read(name + ".lua");
    return new Script(name, own, TIME_LIB + "\n" + own, false, Writes.GROWS, confirmed);
  }

  private static Script ledger(String name) {
    String own = read(name + ".lua");
    return new Script(name, own, TIME_LIB + "\n" + read("ledger.lib.lua") + "\n" + own, false, Writes.GROWS, UNCONFIRMED);
  }

  /** Its function in {@link #LIBRARY}, or null for a script that is not one. */
  String function() {
    return LIBRARY.functionOf(this);
  }

  String own() {
    return own;
  }

  Writes writes() {
    return writes;
  }

  /**
   * True for scripts whose answer confirms their writes to a client (a publish, a settlement, a
   * consumer's settings): with redis.waitReplicas they are confirmed only once replicas took them.
   */
  boolean confirmed() {
    return confirmed;
  }

  /** True for per-consumer scripts that may change what the consumer has spooled. */
  public boolean changesSpool() {
    return changesSpool;
  }

  public String name() {
    return name;
  }

  String body() {
    return body;
  }

  String sha() {
    return sha;
  }

  private static String read(String file) {
    try (InputStream in = Script.class.getResourceAsStream("/lua/" + file)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource lua/" + file);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String sha1(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
