package io.herald.consumer;

import io.herald.protocol.TopicName;
import io.herald.settings.SettingsReader;
import io.herald.topic.TopicPattern;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;

/**
 * A consumer's settings, defaults filled in and ranges checked (protocol.md, "Consumer settings").
 *
 * @param ackTimeoutMs     ms a hand-out may stay unacked before it is stale (5 s .. 1 h, default 30 s)
 * @param maxPollRecords   most events in one batch (1..1000, default 10)
 * @param maxBatchBytes    most bytes of events in one batch, which holds at least one all the same
 *                         (1 KiB .. 64 MiB, default 4 MiB)
 * @param maxUnacked       most delivered-but-unacked events, stale ones included (1..100000, default 500)
 * @param retentionMs      ms an event not yet acked is kept (1 min .. 30 d, default 7 d)
 * @param redelivery       backoff before a stale delivery is handed out again, and how many
 *                         deliveries an event gets before the dead-letter queue
 * @param redeliverOnDisconnect true: when a socket closes, its unacked deliveries become stale at
 *                              once instead of at their deadlines (default false)
 * @param rateLimit        poll requests allowed across all nodes, and what happens beyond
 * @param deadLetter       false: events over maxDeliveries are dropped (and counted) instead of
 *                         dead-lettered (default true)
 * @param errorQueue       false: events nacked with REJECT are dropped (and counted) (default true)
 * @param maxTtlMs         upper bound on an event's time to live on this consumer, or null for none
 * @param admission        whether it takes new events, how much it may hold, and what a refusal does
 * @param ordering         KEY: events with the same key are handed out one at a time, in arrival order
 */
public record ConsumerSettings(String name, List<TopicPattern> topics, AckMode ackMode, long ackTimeoutMs,
    int maxPollRecords, int maxBatchBytes, int maxUnacked, long retentionMs, Redelivery redelivery, boolean redeliverOnDisconnect,
    RateLimit rateLimit, boolean deadLetter, boolean errorQueue, Long maxTtlMs, Admission admission,
    Ordering ordering) {

  public enum AckMode {
    EXPLICIT, AUTO;

    String wire() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Backoff after the n-th delivery missed its deadline: min(initialDelayMs · multiplier^(n−1), maxDelayMs).
   *
   * @param initialDelayMs first backoff (0 .. 1 h, default 1 s)
   * @param multiplier     growth per delivery (1.0 .. 10.0, default 2.0)
   * @param maxDelayMs     cap (0 .. 1 d, default 60 s)
   * @param maxDeliveries  0: unlimited (until retention); else the delivery that would exceed it goes
   *                       to the dead-letter queue instead (0..1000, default 0)
   */
  public record Redelivery(long initialDelayMs, double multiplier, long maxDelayMs, int maxDeliveries) {}

  /**
   * Over {@code tps} poll requests in any one second, the consumer is blocked for {@code blockMs}.
   *
   * @param tps              poll requests per second, across all nodes (1..100000, default 100)
   * @param blockMs          how long a consumer over the limit is blocked (1 s .. 1 h, default 45 s)
   * @param graceMs          how long its sockets stay open after the first notice (0..blockMs, default 15 s)
   * @param noticeIntervalMs how often its sockets are told (100 ms .. 60 s, default 2 s)
   * @param closeMode        how its sockets are closed when the grace ends
   */
  public record RateLimit(int tps, long blockMs, long graceMs, long noticeIntervalMs, CloseMode closeMode) {}

  /**
   * What may be spooled for the consumer.
   *
   * @param enabled                  false: shut down, nothing new is spooled for it and it receives nothing
   * @param quotaBytes               most spooled bytes held for it, or null for no limit
   * @param quotaEvents              most spooled events held for it, or null for no limit
   * @param rejectPublishWhenRefused true: an event it cannot take is refused to the publisher for
   *                                 every consumer; false: it skips the event (counted as discarded)
   * @param namespace                the namespace whose quota its events count against, or null
   */
  public record Admission(boolean enabled, Long quotaBytes, Long quotaEvents, boolean rejectPublishWhenRefused,
      String namespace) {}

  /** How the consumer's events of one key are handed out (protocol.md, "Ordering"). */
  public enum Ordering {
    /** In any order, several at a time. */
    NONE,
    /** One at a time per key: the next only once the one before it is settled. */
    KEY
  }

  public enum CloseMode {
    /** Dropped without a close frame: clients see 1006. */
    DROP,
    /** A close frame 1008 Too Many Requests. */
    POLICY
  }

  /** Reads settings, reporting every bad field through {@code reader}'s errors. */
  public static ConsumerSettings read(String name, SettingsReader reader) {
    List<TopicPattern> topics = new ArrayList<>();
    for (String pattern : reader.texts("topics", 1, 100)) {
      try {
        topics.add(TopicPattern.parse(pattern));
      } catch (IllegalArgumentException e) {
        reader.error("topics", "'" + pattern + "': " + e.getMessage());
      }
    }
    String ackMode = reader.oneOf("ackMode", "explicit", List.of("explicit", "auto"));
    long ackTimeoutMs = reader.integer("ackTimeoutMs", 30_000, 5_000, 3_600_000);
    long maxPollRecords = reader.integer("maxPollRecords", 10, 1, 1000);
    long maxBatchBytes = reader.integer("maxBatchBytes", 4L << 20, 1024, 64L << 20);
    long maxUnacked = reader.integer("maxUnacked", 500, 1, 100_000);
    long retentionMs = reader.integer("retentionMs", 604_800_000L, 60_000, 2_592_000_000L);
    SettingsReader backoff = reader.section("redelivery");
    Redelivery redelivery = new Redelivery(
        backoff.integer("initialDelayMs", 1000, 0, 3_600_000),
        backoff.decimal("multiplier", 2.0, 1.0, 10.0),
        backoff.integer("maxDelayMs", 60_000, 0, 86_400_000),
        (int) backoff.integer("maxDeliveries", 0, 0, 1000));
    backoff.finish();
    boolean redeliverOnDisconnect = reader.bool("redeliverOnDisconnect", false);
    SettingsReader limit = reader.section("rateLimit");
    long tps = limit.integer("tps", 100, 1, 100_000);
    long blockMs = limit.integer("blockMs", 45_000, 1_000, 3_600_000);
    RateLimit rateLimit = new RateLimit((int) tps, blockMs,
        limit.integer("graceMs", Math.min(15_000, blockMs), 0, blockMs),
        limit.integer("noticeIntervalMs", 2_000, 100, 60_000),
        CloseMode.valueOf(limit.oneOf("closeMode", "drop", List.of("drop", "policy")).toUpperCase(java.util.Locale.ROOT)));
    limit.finish();
    boolean deadLetter = reader.bool("deadLetter", true);
    boolean errorQueue = reader.bool("errorQueue", true);
    Long maxTtlMs = reader.optionalInteger("maxTtlMs", 1_000, 2_592_000_000L);
    Admission admission = new Admission(reader.bool("enabled", true),
        reader.optionalInteger("quotaBytes", 1, Long.MAX_VALUE),
        reader.optionalInteger("quotaEvents", 1, Long.MAX_VALUE),
        reader.bool("rejectPublishWhenRefused", true),
        reader.name("namespace"));
    Ordering ordering = Ordering.valueOf(reader.oneOf("ordering", "none", List.of("none", "key"))
        .toUpperCase(java.util.Locale.ROOT));
    reader.finish();
    return new ConsumerSettings(name, List.copyOf(topics), AckMode.valueOf(ackMode.toUpperCase(java.util.Locale.ROOT)),
        ackTimeoutMs, (int) maxPollRecords, (int) maxBatchBytes, (int) maxUnacked, retentionMs, redelivery, redeliverOnDisconnect, rateLimit,
        deadLetter, errorQueue, maxTtlMs, admission, ordering);
  }

  /** Parses settings sent by a client or stored in Redis; throws with every bad field. */
  public static ConsumerSettings parse(String name, JsonObject json) {
    SettingsReader reader = new SettingsReader(json);
    ConsumerSettings settings = read(name, reader);
    reader.failIfErrors();
    return settings;
  }

  public boolean matches(String topic) {
    for (TopicPattern pattern : topics) {
      if (pattern.matches(topic)) {
        return true;
      }
    }
    return false;
  }

  /** Every setting, defaults included: what GET returns and what Redis stores. */
  public JsonObject toJson() {
    JsonArray patterns = new JsonArray();
    topics.forEach(p -> patterns.add(p.toString()));
    return new JsonObject()
        .put("topics", patterns)
        .put("ackMode", ackMode.wire())
        .put("ackTimeoutMs", ackTimeoutMs)
        .put("maxPollRecords", maxPollRecords)
        .put("maxBatchBytes", maxBatchBytes)
        .put("maxUnacked", maxUnacked)
        .put("retentionMs", retentionMs)
        .put("redelivery", new JsonObject()
            .put("initialDelayMs", redelivery.initialDelayMs())
            .put("multiplier", redelivery.multiplier())
            .put("maxDelayMs", redelivery.maxDelayMs())
            .put("maxDeliveries", redelivery.maxDeliveries()))
        .put("redeliverOnDisconnect", redeliverOnDisconnect)
        .put("rateLimit", new JsonObject()
            .put("tps", rateLimit.tps())
            .put("blockMs", rateLimit.blockMs())
            .put("graceMs", rateLimit.graceMs())
            .put("noticeIntervalMs", rateLimit.noticeIntervalMs())
            .put("closeMode", rateLimit.closeMode().name().toLowerCase(java.util.Locale.ROOT)))
        .put("maxTtlMs", maxTtlMs)
        .put("deadLetter", deadLetter)
        .put("errorQueue", errorQueue)
        .put("enabled", admission.enabled())
        .put("quotaBytes", admission.quotaBytes())
        .put("quotaEvents", admission.quotaEvents())
        .put("rejectPublishWhenRefused", admission.rejectPublishWhenRefused())
        .put("namespace", admission.namespace())
        .put("ordering", ordering.name().toLowerCase(java.util.Locale.ROOT));
  }

  public boolean enabled() {
    return admission.enabled();
  }

  /**
   * True for a consumer of the gateway's own topics only ($sys/...): its deliveries do not count
   * against maxUnackedTotal, so that alerts about that limit still get through.
   */
  public boolean systemOnly() {
    return topics.stream().allMatch(pattern -> pattern.toString().startsWith(TopicName.SYSTEM_LEVEL + "/"));
  }

  /** The settings the Redis scripts read from the consumer's meta hash, as name/value pairs. */
  public List<Object> scriptFields() {
    return List.of("ackMode", ackMode.wire(), "ackTimeoutMs", ackTimeoutMs, "maxUnacked", maxUnacked,
        "retentionMs", retentionMs, "initialDelayMs", redelivery.initialDelayMs(),
        "multiplier", redelivery.multiplier(), "maxDelayMs", redelivery.maxDelayMs(),
        "rateTps", rateLimit.tps(), "rateBlockMs", rateLimit.blockMs(),
        "maxDeliveries", redelivery.maxDeliveries(), "deadLetter", deadLetter, "errorQueue", errorQueue,
        "maxTtlMs", maxTtlMs == null ? 0 : maxTtlMs, "enabled", admission.enabled(),
        // '' for no quota: the publish script checks the consumer's own quotas exactly
        "quotaBytes", admission.quotaBytes() == null ? "" : admission.quotaBytes(),
        "quotaEvents", admission.quotaEvents() == null ? "" : admission.quotaEvents(),
        "rejectPublishWhenRefused", admission.rejectPublishWhenRefused(),
        "ordering", ordering.name().toLowerCase(java.util.Locale.ROOT));
  }
}
