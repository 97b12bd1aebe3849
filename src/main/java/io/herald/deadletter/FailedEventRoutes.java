package io.herald.deadletter;

import io.herald.ack.Acks;
import io.herald.consumer.ConsumerDirectory;
import io.herald.copy.Copies;
import io.herald.copy.EventCopy;
import io.herald.copy.Stubs;
import io.herald.consumer.ConsumerScripts;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.Requests;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolLedger;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.redis.client.Response;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The dead-letter queue ({@code .../dead-letters/}) and the error queue ({@code .../errors/}) of a
 * consumer: read from the head, ack (discard), redrive back to the consumer's queue (see
 * {@link Redrives}).
 *
 * <p>A read does not take events out of the queue, so two readers see the same events; an ack
 * discards them.
 */
public final class FailedEventRoutes {
  private static final System.Logger LOG = System.getLogger(FailedEventRoutes.class.getName());
  private static final SecureRandom RANDOM = new SecureRandom();

  private final RedisStore store;
  private final ConsumerDirectory directory;
  private final Redrives redrives;
  private final Copies copies;

  public FailedEventRoutes(Vertx vertx, RedisStore store, ConsumerDirectory directory, SpoolLedger ledger,
      HoldSettler settler, Copies copies) {
    this.store = store;
    this.copies = copies;
    this.directory = directory;
    this.redrives = new Redrives(vertx, store, ledger, settler);
  }

  public void mount(Router router) {
    for (String queue : List.of("dead-letters", "errors")) {
      String kind = queue.equals("dead-letters") ? "dead" : "errors";
      router.post("/v1/consumers/:consumer/" + queue + "/poll").handler(ctx -> poll(ctx, kind));
      router.post("/v1/consumers/:consumer/" + queue + "/acks").handler(ctx -> ack(ctx, kind));
      router.post("/v1/consumers/:consumer/" + queue + "/redrive").handler(ctx -> redrive(ctx, kind));
    }
  }

  private void poll(RoutingContext ctx, String kind) {
    Responses.replyBuffer(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      Long maxEvents = Requests.integer(body, "maxEvents", 1, 1000);
      // accepted for the shape of a poll; a read of a queue answers at once
      Requests.integer(body, "waitMs", 0, 20_000);
      Requests.onlyFields(body, "maxEvents", "waitMs");
      String batchAckId = HexFormat.of().formatHex(randomBytes());
      return consumer(ctx).compose(consumer -> {
        List<String> keys = new ArrayList<>(Keys.consumer(consumer));
        keys.add(Keys.batch(consumer, batchAckId));
        return run(consumer, Script.FAILED_POLL, keys, List.of(kind, maxEvents == null ? 10 : maxEvents))
            .compose(reply -> blobs(consumer, reply).map(blobs -> batch(reply, blobs, batchAckId)));
      });
    });
  }

  /**
   * The blobs of the events read, in order: as Redis held them (inline), or from their copies
   * (docs/internals.md); null for one whose copy is gone (left out of the batch, and dropped: it
   * can never be read again).
   */
  private Future<List<Buffer>> blobs(String consumer, Response reply) {
    List<String> copyIds = new ArrayList<>();
    for (int i = 0; i < reply.size(); i += 3) {
      String copyId = Stubs.copyOf(eventIdOf(reply.get(i).toString()), reply.get(i + 1));
      if (copyId != null) {
        copyIds.add(copyId);
      }
    }
    Future<Map<String, EventCopy>> read = copyIds.isEmpty() ? Future.succeededFuture(Map.of())
        : copies.read(store, copyIds);
    return read.map(found -> {
      List<Buffer> blobs = new ArrayList<>();
      List<String> lost = new ArrayList<>();
      for (int i = 0; i < reply.size(); i += 3) {
        String eventId = eventIdOf(reply.get(i).toString());
        String copyId = Stubs.copyOf(eventId, reply.get(i + 1));
        Buffer blob = copyId == null ? reply.get(i + 1).toBuffer() : Stubs.blob(found.get(copyId), eventId);
        if (blob == null) {
          lost.add(eventId);
        }
        blobs.add(blob);
      }
      if (!lost.isEmpty()) {
        LOG.log(System.Logger.Level.ERROR, "The stored copies of " + lost.size() + " failed events of consumer '"
            + consumer + "' are gone; they are dropped: " + lost);
        store.eval(Script.LOST_COPY, Keys.consumer(consumer), lost)
            .onSuccess(letGo -> copies.releaseAnswered(store, consumer, letGo, 0)).onFailure(failure -> LOG.log(
            System.Logger.Level.WARNING, "Could not drop failed events whose copies are gone: " + failure.getMessage()));
      }
      return blobs;
    });
  }

  /** An ackId's eventId: what comes before its first dot. */
  private static String eventIdOf(String ackId) {
    return ackId.substring(0, Math.max(0, ackId.indexOf('.')));
  }

  /** The batch body: each event as stored, with its ackId and why it is in the queue. */
  private static Buffer batch(Response reply, List<Buffer> blobs, String batchAckId) {
    Buffer json = Buffer.buffer().appendString("{\"batchAckId\":")
        .appendString(reply.size() > 0 ? "\"" + batchAckId + "\"" : "null").appendString(",\"events\":[");
    boolean first = true;
    for (int i = 0; i < reply.size(); i += 3) {
      Buffer blob = blobs.get(i / 3);
      if (blob == null) {
        continue;
      }
      JsonObject failure = new JsonObject(reply.get(i + 2).toString());
      json.appendString(first ? "{" : ",{")
          .appendString("\"ackId\":\"").appendString(reply.get(i).toString()).appendString("\",")
          .appendBuffer(blob)
          .appendString(",\"deliveryCount\":").appendString(String.valueOf(failure.getLong("deliveryCount")));
      if (failure.containsKey("deadLetterReason")) {
        json.appendString(",\"deadLetterReason\":").appendString(Json.encode(failure.getString("deadLetterReason")));
      }
      // a string, or absent: versions before 0.10.0 stored false for "no nack reason"
      if (failure.getValue("reason") instanceof String reason) {
        json.appendString(",\"reason\":").appendString(Json.encode(reason));
      }
      json.appendString("}");
      first = false;
    }
    return json.appendString("]}");
  }

  private void ack(RoutingContext ctx, String kind) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      JsonArray ackIds = Requests.strings(body, "ackIds", Acks.MAX_ACK_IDS);
      JsonArray batchAckIds = Requests.strings(body, "batchAckIds", Acks.MAX_BATCH_ACK_IDS);
      Requests.onlyFields(body, "ackIds", "batchAckIds");
      if (ackIds.isEmpty() && batchAckIds.isEmpty()) {
        throw ApiException.invalid("ackIds", "name at least one ackId or batchAckId");
      }
      return consumer(ctx).compose(consumer -> {
        JsonArray results = new JsonArray();
        List<Object> args = new ArrayList<>(List.of(kind, ackIds.size()));
        ackIds.forEach(args::add);
        Future<Void> chain = ackIds.isEmpty() ? Future.succeededFuture()
            : run(consumer, Script.FAILED_ACK, Keys.consumer(consumer), args).map(reply -> {
              releaseLetGo(consumer, reply);
              for (int i = 0; i < ackIds.size(); i++) {
                results.add(new JsonObject().put("ackId", ackIds.getValue(i)).put("status", reply.get(0).get(i).toString()));
              }
              return null;
            });
        // one batch per call: each holds up to 1,000 events, and a call holds Redis while it runs
        for (Object id : batchAckIds) {
          String batchAckId = (String) id;
          if (Requests.isBatchAckId(batchAckId)) {
            chain = chain.compose(ok -> ackBatch(consumer, kind, batchAckId, results));
          }
        }
        return chain.map(ok -> new JsonObject().put("results", results));
      });
    });
  }

  private Future<Void> ackBatch(String consumer, String kind, String batchAckId, JsonArray results) {
    List<String> keys = new ArrayList<>(Keys.consumer(consumer));
    keys.add(Keys.batch(consumer, batchAckId));
    return run(consumer, Script.FAILED_ACK, keys, List.of(kind, 0)).map(reply -> {
      releaseLetGo(consumer, reply);
      Response rows = reply.get(1);
      if (rows.size() == 0) {
        results.add(new JsonObject().put("batchAckId", batchAckId).put("status", "UNKNOWN"));
      }
      for (int i = 0; i < rows.size(); i += 2) {
        results.add(new JsonObject().put("ackId", rows.get(i).toString()).put("status", rows.get(i + 1).toString()));
      }
      return null;
    });
  }

  private void redrive(RoutingContext ctx, String kind) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      JsonArray eventIds = Requests.strings(body, "eventIds", Acks.MAX_ACK_IDS);
      Object all = body.getValue("all");
      Requests.onlyFields(body, "eventIds", "all");
      if (all != null && !Boolean.TRUE.equals(all)) {
        throw ApiException.invalid("all", "must be true when given");
      }
      if ((all != null) == !eventIds.isEmpty()) {
        throw ApiException.invalid("eventIds", "name the eventIds to redrive, or send {\"all\":true}");
      }
      return directory.require(ctx.pathParam("consumer")).compose(consumer -> all != null
          ? redrives.all(consumer, kind)
          : redrives.named(consumer, kind, eventIds.stream().map(String.class::cast).toList()));
    });
  }

  /** Releases the copies an ack of the queue let go of: its answer's last item (failed_ack.lua). */
  private void releaseLetGo(String consumer, Response reply) {
    copies.releaseAnswered(store, consumer, reply.get(reply.size() - 1), 0);
  }

  private Future<Response> run(String consumer, Script script, List<String> keys, List<?> args) {
    return ConsumerScripts.run(store, script, consumer, keys, args, true);
  }

  private Future<String> consumer(RoutingContext ctx) {
    return directory.require(ctx.pathParam("consumer")).map(ConsumerSettings::name);
  }

  private static byte[] randomBytes() {
    byte[] bytes = new byte[16];
    RANDOM.nextBytes(bytes);
    return bytes;
  }
}
