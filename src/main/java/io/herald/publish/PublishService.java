package io.herald.publish;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.http.ErrorCode;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolFigures;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.herald.topic.TopicDirectory;
import io.herald.topic.TopicName;
import io.herald.topic.TopicSettings;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.ResponseType;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Publishes events: spools each one for every matching consumer and confirms only when every one
 * of those writes succeeded.
 *
 * <p>Publish requests that arrive together on this verticle's event loop are written together: one
 * eventId reservation for all of them, one ledger call admitting those that count against a quota,
 * then one spool script per matching consumer carrying the events of every request that matched
 * it, all sent at once. Under load a round trip carries many requests; alone, a request goes out on
 * the next turn of the loop. Event-loop confined.
 */
public final class PublishService {
  private static final System.Logger LOG = System.getLogger(PublishService.class.getName());
  private static final SecureRandom RANDOM = new SecureRandom();
  /** Most events written in one round of calls; a larger gathering is split. */
  static final int MAX_EVENTS_PER_ROUND = 1000;

  private final Context context;
  private final RedisStore store;
  private final ConsumerDirectory consumers;
  private final TopicDirectory topics;
  private final SpoolLedger ledger;
  private final long maxEventBytes;
  private final DueTimes dueTimes;
  private final Idempotency idempotency;
  private final long idempotencyWindowMs;
  private final HoldSettler settler;
  private List<PendingPublish> gathering = new ArrayList<>();
  private int gatheredEvents;

  /**
   * @param dueTimes            told when events with a time to live must expire
   * @param settler             gives the ledger holds of publish rounds back
   * @param idempotencyWindowMs how long a topic remembers an idempotencyKey
   */
  public PublishService(Context context, RedisStore store, ConsumerDirectory consumers, TopicDirectory topics,
      SpoolLedger ledger, HoldSettler settler, long maxEventBytes, DueTimes dueTimes, long idempotencyWindowMs) {
    this.context = context;
    this.store = store;
    this.consumers = consumers;
    this.topics = topics;
    this.ledger = ledger;
    this.settler = settler;
    this.maxEventBytes = maxEventBytes;
    this.dueTimes = dueTimes;
    this.idempotency = new Idempotency(store, idempotencyWindowMs);
    this.idempotencyWindowMs = idempotencyWindowMs;
  }

  /** Publishes a request body to {@code topic}; the result is the protocol's {@code results} body. */
  public Future<JsonObject> publish(String topic, Buffer body) {
    checkTopic(topic);
    return publish(topic, EventParser.parse(body), true);
  }

  /** Publishes parsed events (e.g. of a WebSocket frame) to {@code topic}. */
  public Future<JsonObject> publish(String topic, PublishRequest request) {
    checkTopic(topic);
    return publish(topic, request.events(), true);
  }

  /**
   * Publishes one of the gateway's own events on a {@code $sys/} topic. Quotas do not hold it back:
   * an alert that the spool is full must get through.
   */
  public Future<JsonObject> publishSystem(String topic, JsonObject payload) {
    Buffer json = payload.toBuffer();
    return publish(topic, List.of(new PublishedEvent(json, null, Map.of(), null, null, null, json.length())), false);
  }

  private static void checkTopic(String topic) {
    if (TopicName.isSystem(topic)) {
      throw new ApiException(ErrorCode.PUBLISH_ACL_DENIED, "Topics under $sys/ are the gateway's own",
          new JsonObject().put("topic", topic));
    }
    String problem = TopicName.problem(topic);
    if (problem != null) {
      throw ApiException.invalid("topic", problem);
    }
  }

  private Future<JsonObject> publish(String topic, List<PublishedEvent> events, boolean quotasHold) {
    TopicSettings settings = topics.get(topic);
    if (!settings.enabled()) {
      throw new ApiException(ErrorCode.TOPIC_DISABLED, "Topic '" + topic + "' is disabled",
          new JsonObject().put("topic", topic));
    }
    List<ConsumerSettings> matching = consumers.matching(topic);
    matching.stream().filter(c -> !c.enabled() && !c.admission().rejectPublishWhenRefused())
        .forEach(c -> discarded(c.name(), events.size()));
    PendingPublish publish = new PendingPublish(settings, events, matching, maxEventBytes,
        quotasHold && ledger.applies(settings, matching));
    int accepted = publish.accepted();
    if (accepted == 0) {
      publish.finish(Map.of());
      return publish.promise.future();
    }
    if (gatheredEvents + accepted > MAX_EVENTS_PER_ROUND) {
      write(takeGathering());
    }
    if (gathering.isEmpty()) {
      // requests already queued on this event loop join this round before it is written
      context.runOnContext(v -> write(takeGathering()));
    }
    gathering.add(publish);
    gatheredEvents += accepted;
    return publish.promise.future();
  }

  private List<PendingPublish> takeGathering() {
    List<PendingPublish> round = gathering;
    gathering = new ArrayList<>();
    gatheredEvents = 0;
    return round;
  }

  /**
   * Reserves eventIds for the whole round, claims idempotency keys, has the ledger admit what counts
   * against a quota, then spools.
   */
  private void write(List<PendingPublish> round) {
    if (round.isEmpty()) {
      return;
    }
    int total = round.stream().mapToInt(PendingPublish::accepted).sum();
    store.eval(Script.EVENT_IDS, List.of(Keys.EVENT_ID_CLOCK), List.of(total))
        .compose(ids -> {
          long publishedAt = ids.get(0).toLong();
          long sequence = ids.get(1).toLong();
          for (PendingPublish publish : round) {
            sequence = publish.assign(publishedAt, sequence);
          }
          return idempotency.claim(round);
        })
        .onFailure(failure -> round.forEach(p -> p.fail(failure)))
        .onSuccess(ok -> admit(round));
  }

  private void admit(List<PendingPublish> round) {
    List<PendingPublish> counted = round.stream().filter(p -> p.counted).toList();
    if (counted.isEmpty()) {
      spool(round, null);
      return;
    }
    byte[] hold = new byte[12];
    RANDOM.nextBytes(hold);
    String holdId = HexFormat.of().formatHex(hold);
    ledger.reserve(store, holdId, counted.stream().map(PendingPublish::group).toList())
        .onFailure(failure -> round.forEach(p -> p.fail(failure)))
        .onSuccess(verdicts -> {
          int next = 0;
          for (PendingPublish publish : counted) {
            next = publish.judged(verdicts, next);
            publish.skipped().forEach(this::discarded);
          }
          spool(round, holdId);
        });
  }

  /**
   * One spool script per consumer, each realizing its part of the ledger's hold (if any); then the
   * hold is given back with the consumers' figures, which now include what it stood for.
   */
  private void spool(List<PendingPublish> round, String holdId) {
    Map<String, List<Object>> spools = new LinkedHashMap<>();
    round.forEach(publish -> publish.addTo(spools));
    Map<String, Future<Boolean>> writes = new LinkedHashMap<>();
    List<SpoolFigures> figures = new ArrayList<>();
    List<String> holds = new ArrayList<>();
    spools.forEach((consumer, events) -> {
      String hold = holdId == null ? "" : holdId + ":" + consumer;
      if (holdId != null) {
        holds.add(hold);
      }
      events.addAll(0, List.of(hold, idempotencyWindowMs));
      writes.put(consumer, store.eval(Script.PUBLISH, Keys.spool(consumer), events).map(reply -> {
          if (reply.type() != ResponseType.MULTI) {
            return false; // deleted or disabled meanwhile
          }
          dueTimes.file(consumer, reply.get(1).toLong());
          figures.add(SpoolFigures.parse(consumer, consumers.get(consumer), reply, 2));
          return true;
        }));
    });
    Future.join(new ArrayList<>(writes.values())).onComplete(done -> {
      round.forEach(publish -> publish.finish(writes));
      idempotency.settle(round);
      if (holdId != null) {
        settler.settle(holds, figures);
      }
    });
  }

  /**
   * Counts events a consumer skipped (disabled or full, it lets its publishers through); a count,
   * so best effort.
   */
  private void discarded(String consumer, int events) {
    store.send(Request.cmd(Command.HINCRBY).arg(Keys.consumer(consumer).get(0)).arg("discarded").arg(events))
        .onFailure(failure -> LOG.log(System.Logger.Level.DEBUG, "Could not count discarded events: " + failure.getMessage()));
  }
}
