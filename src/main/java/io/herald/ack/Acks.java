package io.herald.ack;

import io.herald.Addresses;
import io.herald.consumer.ConsumerSettings;
import io.herald.metrics.HeraldMetrics;
import io.herald.protocol.ApiException;
import io.herald.protocol.Requests;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/** Sends acks to the node's ack tracker, for the HTTP API and the WebSocket gateway alike. */
public final class Acks {
  /** Most ackIds in one ack request: a full batch. */
  public static final int MAX_ACK_IDS = 1000;
  /**
   * Most batchAckIds in one ack request: each may stand for 1,000 events (the tracker spreads them
   * over script calls of bounded work).
   */
  public static final int MAX_BATCH_ACK_IDS = 10;

  private final Vertx vertx;
  private final DeliveryOptions options;
  private final HeraldMetrics metrics;

  public Acks(Vertx vertx, long redisTimeoutMs, HeraldMetrics metrics) {
    this.vertx = vertx;
    this.metrics = metrics;
    this.options = new DeliveryOptions().setSendTimeout(redisTimeoutMs * 2);
  }

  /**
   * Acks {@code ackIds} and the events of {@code batchAckIds} of {@code consumer}; the result is the
   * protocol's {@code {"results":[...]}}. A malformed batchAckId is UNKNOWN without asking Redis.
   * {@code bySocket}: they came over a consumer socket (which knows of its own settlements); else
   * full push windows are told (see {@code tell_windows} in wakeups.lib.lua).
   */
  public Future<JsonObject> ack(ConsumerSettings consumer, JsonArray ackIds, JsonArray batchAckIds, boolean bySocket) {
    if (ackIds.size() + batchAckIds.size() == 0) {
      return Future.failedFuture(ApiException.invalid("ackIds", "name at least one ackId or batchAckId"));
    }
    JsonArray wellFormed = new JsonArray();
    JsonArray malformed = new JsonArray();
    batchAckIds.forEach(id -> (Requests.isBatchAckId((String) id) ? wellFormed : malformed).add(id));
    // the size a batchAckId tells, or at most maxPollRecords: the tracker packs its calls by them
    JsonArray sizes = new JsonArray();
    wellFormed.forEach(id -> sizes.add(Requests.batchSize((String) id, consumer.maxPollRecords())));
    JsonObject request = new JsonObject().put("consumer", consumer.name()).put("batchSizes", sizes)
        .put("ackIds", ackIds).put("batchAckIds", wellFormed).put("bySocket", bySocket);
    return vertx.eventBus().<JsonObject>request(Addresses.ACKS, request, options).map(reply -> {
      JsonObject results = reply.body();
      JsonArray rows = results.getJsonArray("results");
      malformed.forEach(id -> rows.add(new JsonObject().put("batchAckId", id).put("status", "UNKNOWN")));
      // counted in runs of one status: a batch's rows mostly share theirs
      String status = null;
      int run = 0;
      for (int i = 0; i < rows.size(); i++) {
        String next = rows.getJsonObject(i).getString("status");
        if (!next.equals(status) && run > 0) {
          metrics.acked(status, run);
          run = 0;
        }
        status = next;
        run++;
      }
      if (run > 0) {
        metrics.acked(status, run);
      }
      return results;
    });
  }
}
