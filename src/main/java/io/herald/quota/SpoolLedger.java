package io.herald.quota;

import io.herald.Addresses;
import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicSettings;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The gateway-wide account of spooled bytes and unacked events, against which publishes are
 * admitted (quotas of the gateway, namespaces, topics and consumers) and polls get room
 * (maxUnackedTotal). It lives in Redis under one hash tag; every consumer's own figures stay exact in
 * the consumer's keys and reach the ledger when a publish or poll settles its hold, and otherwise
 * within {@code quotas.syncMs} of any script that changed them (this node remembers which consumers
 * those were; {@link SpoolAccountVerticle} sends their figures). Raised and cleared alerts are
 * logged and published. Shared by the node's verticles: thread-safe, each call with the caller's
 * own store.
 */
public final class SpoolLedger {
  private static final System.Logger LOG = System.getLogger(SpoolLedger.class.getName());
  /** Alerts are published on this topic prefix and their name: spool, unacked. */
  public static final String ALERT_TOPICS = "$sys/alerts/";

  private final Vertx vertx;
  private final HeraldConfig.Quotas quotas;
  /** An unsettled hold is given back after this long: its publish's node died. */
  private final long holdMs;
  private final Set<String> touched = ConcurrentHashMap.newKeySet();

  public SpoolLedger(Vertx vertx, HeraldConfig.Quotas quotas, long redisTimeoutMs) {
    this.vertx = vertx;
    this.quotas = quotas;
    this.holdMs = Math.max(10_000, 3 * redisTimeoutMs);
  }

  public HeraldConfig.Quotas quotas() {
    return quotas;
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
   * room it takes under {@code holdId} until {@link #settle}.
   */
  public Future<List<Verdict>> reserve(RedisStore store, String holdId, List<Group> groups) {
    List<Object> args = new ArrayList<>(List.of(holdId, holdMs, quota(quotas.spoolBytes()), groups.size()));
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
    return store.eval(Script.QUOTA_RESERVE, Keys.LEDGER, args).map(reply -> {
      List<Verdict> verdicts = new ArrayList<>(reply.size());
      reply.forEach(verdict -> verdicts.add(Verdict.parse(verdict.toString())));
      return verdicts;
    });
  }

  /**
   * Takes room for up to {@code wanted} more unacked events under maxUnackedTotal, held under
   * {@code holdId} ("<id>:<consumer>") until {@link #settle} or the poll's figures; the answer is how
   * many the poll may hand out new.
   */
  public Future<Integer> takeUnacked(RedisStore store, String holdId, int wanted) {
    return store.eval(Script.QUOTA_TAKE_UNACKED, Keys.LEDGER, List.of(holdId, holdMs, quotas.maxUnackedTotal(), wanted))
        .map(reply -> reply.toInteger());
  }

  /**
   * Gives back the holds {@code holdIds} and brings the ledger up to date with these consumers'
   * figures; announces raised or cleared alerts, and room under maxUnackedTotal for polls held back
   * by it (on every node).
   */
  public Future<Void> settle(RedisStore store, Collection<String> holdIds, Collection<SpoolFigures> figures) {
    List<Object> args = new ArrayList<>(List.of(String.join(" ", holdIds), quota(quotas.spoolBytes()),
        quota(quotas.maxUnackedTotal()), quotas.raisePercent(), quotas.clearPercent()));
    figures.forEach(f -> args.addAll(f.args()));
    return store.eval(Script.QUOTA_SETTLE, Keys.LEDGER, args).compose(reply -> {
      forgetRealized(store, figures);
      alert("spool", reply.get(1).toString(), reply.get(0).toLong(), quotas.spoolBytes(), "bytes");
      alert("unacked", reply.get(3).toString(), reply.get(2).toLong(), quotas.maxUnackedTotal(), "events");
      return reply.get(4).toInteger() == 1
          ? store.send(Request.cmd(Command.PUBLISH).arg(Keys.ROOM_CHANNEL).arg("")).mapEmpty()
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
