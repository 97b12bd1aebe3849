package io.herald.ack;

import io.herald.consumer.ConsumerScripts;
import io.herald.protocol.ApiException;
import io.herald.protocol.Requests;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Nacks and deadline extensions, for the HTTP API and the WebSocket gateway alike: one script call
 * per request (they are rare next to acks, which the ack tracker coalesces). Both change when the
 * consumer next has timed work, which is filed with the scheduler.
 */
public final class Settlements {
  /** Longest nack reason kept with an event, in UTF-8 bytes. */
  public static final int MAX_REASON_BYTES = 1024;
  /** The fields of a nack body (HTTP, or a WebSocket frame besides op and requestId). */
  public static final String[] NACK_FIELDS = {"ackIds", "action", "delayMs", "reason"};
  /** The fields of an extend body. */
  public static final String[] EXTEND_FIELDS = {"ackIds", "extendMs"};

  public enum Action { REQUEUE, REJECT }

  private final RedisStore store;
  private final DueTimes dueTimes;

  public Settlements(RedisStore store, DueTimes dueTimes) {
    this.store = store;
    this.dueTimes = dueTimes;
  }

  /**
   * Nacks the deliveries a nack body names ({@link #NACK_FIELDS}; unknown fields are the caller's to
   * refuse); the result is the protocol's {@code {"results":[{"ackId","status"}]}}. Throws
   * INVALID_REQUEST naming the field for a bad body. {@code bySocket}: it came over a consumer
   * socket (which knows of its own settlements); else full push windows are told (see
   * {@code tell_windows} in wakeups.lib.lua).
   */
  public Future<JsonObject> nack(String consumer, JsonObject body, boolean bySocket) {
    JsonArray ackIds = ackIds(body);
    Object actionName = body.getValue("action");
    if (!"REQUEUE".equals(actionName) && !"REJECT".equals(actionName)) {
      throw ApiException.invalid("action", "must be REQUEUE or REJECT");
    }
    Action action = Action.valueOf((String) actionName);
    Long delayMs = Requests.integer(body, "delayMs", 0, 86_400_000);
    if (delayMs != null && action == Action.REJECT) {
      throw ApiException.invalid("delayMs", "only a REQUEUE waits");
    }
    Object reason = body.getValue("reason");
    if (reason != null && !(reason instanceof String text && text.getBytes(StandardCharsets.UTF_8).length <= MAX_REASON_BYTES)) {
      throw ApiException.invalid("reason", "must be a string of at most " + MAX_REASON_BYTES + " bytes");
    }
    List<Object> args = new ArrayList<>(ackIds.size() + 4);
    args.add(action.name());
    args.add(delayMs == null ? "" : delayMs);
    args.add(reason == null ? "" : reason);
    args.add(bySocket ? "" : "1");
    ackIds.forEach(args::add);
    return run(Script.NACK, consumer, args).map(reply -> {
      JsonArray results = new JsonArray();
      Response statuses = reply.get(0);
      for (int i = 0; i < ackIds.size(); i++) {
        results.add(new JsonObject().put("ackId", ackIds.getValue(i)).put("status", statuses.get(i).toString()));
      }
      return new JsonObject().put("results", results);
    });
  }

  /** Gives the deliveries an extend body names a new deadline {@code now + extendMs}; the protocol's extend results. */
  public Future<JsonObject> extend(String consumer, JsonObject body) {
    JsonArray ackIds = ackIds(body);
    Long extendMs = Requests.integer(body, "extendMs", 1000, 3_600_000);
    if (extendMs == null) {
      throw ApiException.invalid("extendMs", "is required: 1000..3600000");
    }
    List<Object> args = new ArrayList<>(ackIds.size() + 1);
    args.add(extendMs);
    ackIds.forEach(args::add);
    return run(Script.EXTEND, consumer, args).map(reply -> {
      JsonArray results = new JsonArray();
      Response rows = reply.get(0);
      for (int i = 0; i < ackIds.size(); i++) {
        String status = rows.get(2 * i).toString();
        JsonObject row = new JsonObject().put("ackId", ackIds.getValue(i)).put("status", status);
        if (status.equals("EXTENDED")) {
          row.put("ackDeadline", rows.get(2 * i + 1).toLong());
        }
        results.add(row);
      }
      return new JsonObject().put("results", results);
    });
  }

  private static JsonArray ackIds(JsonObject body) {
    JsonArray ackIds = Requests.strings(body, "ackIds", Acks.MAX_ACK_IDS);
    if (ackIds.isEmpty()) {
      throw ApiException.invalid("ackIds", "name at least one ackId");
    }
    return ackIds;
  }

  /** Runs a script answering {@code {results, now, nextDue}} and files the next due time. */
  private Future<Response> run(Script script, String consumer, List<Object> args) {
    return ConsumerScripts.runWriting(store, script, consumer, Keys.consumer(consumer), args,
        reply -> dueTimes.file(consumer, reply.get(2).toLong()));
  }
}
