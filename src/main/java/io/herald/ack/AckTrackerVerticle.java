package io.herald.ack;

import io.herald.Addresses;
import io.herald.copy.Copies;
import io.herald.protocol.ApiException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The ack tracker: takes ack requests from every HTTP and WebSocket verticle of the node and
 * coalesces those that arrive together for one consumer into script calls, so a consumer acking
 * event by event costs Redis one round trip per burst, not per ack.
 *
 * <p>A script call holds Redis while it runs, so each settles a bounded number of events: a call
 * takes ackIds and batches (each counted as the size its batchAckId tells, else the consumer's
 * {@code maxPollRecords}) up to {@value #MAX_ACKS_PER_CALL}; requests larger than that are split
 * over calls, and the script itself leaves a batch for the next call once it has done that many
 * (a size is only the client's word), so no call settles more than that plus one batch.
 *
 * <p>Request: {@code {"consumer":..., "ackIds":[...], "batchAckIds":[...], "batchSizes":[...]}}; reply:
 * the protocol's {@code {"results":[...]}}; a failure carries the protocol's error envelope
 * ({@link ApiException#failReply}).
 */
public final class AckTrackerVerticle extends VerticleBase {
  /** Most acks in one script call, before the batch that crosses it. */
  static final int MAX_ACKS_PER_CALL = 1000;

  /** Retries of a call whose salt was not the consumer's, before it fails. */
  private static final int SALT_RETRIES = 3;

  private final Supplier<RedisStore> stores;
  private final ConsumerSalts salts;
  private final Copies copies;
  private RedisStore store;
  private MessageConsumer<JsonObject> consumer;
  /** Per consumer: the items of the next call, and the acks they stand for. */
  private final Map<String, List<Item>> waiting = new HashMap<>();
  private final Map<String, Integer> waitingAcks = new HashMap<>();

  /** @param salts the consumers' salts as this node heard them, to check ackIds with */
  public AckTrackerVerticle(Supplier<RedisStore> stores, ConsumerSalts salts, Copies copies) {
    this.stores = stores;
    this.salts = salts;
    this.copies = copies;
  }

  /** One ack request, answered once each of its ackIds and batches has its result. */
  private static final class AckRequest {
    final Message<JsonObject> message;
    final JsonArray ackIds;
    final JsonArray batchAckIds;
    final JsonArray batchSizes;
    /** It came over a consumer socket, not by another path that full push windows must be told of. */
    final boolean bySocket;
    final String[] statuses;
    /** Per batch, its rows of the protocol's results. */
    final JsonArray[] batchRows;
    int missing;
    /** Answered, or failed: a request split over calls fails with the first call that fails. */
    boolean over;

    AckRequest(Message<JsonObject> message) {
      this.message = message;
      this.ackIds = message.body().getJsonArray("ackIds");
      this.batchAckIds = message.body().getJsonArray("batchAckIds");
      this.batchSizes = message.body().getJsonArray("batchSizes");
      this.bySocket = message.body().getBoolean("bySocket", false);
      this.statuses = new String[ackIds.size()];
      this.batchRows = new JsonArray[batchAckIds.size()];
      this.missing = statuses.length + batchRows.length;
    }
  }

  /** One ackId ({@code batch} false) or one batch of a request, by its index there. */
  private record Item(AckRequest request, boolean batch, int index) {
    String id() {
      return (batch ? request.batchAckIds : request.ackIds).getString(index);
    }

    int acks() {
      return batch ? request.batchSizes.getInteger(index) : 1;
    }
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    consumer = vertx.eventBus().consumer(Addresses.ACKS, this::onRequest);
    return consumer.completion();
  }

  @Override
  public Future<?> stop() {
    return consumer.unregister().eventually(store::close);
  }

  private void onRequest(Message<JsonObject> message) {
    String name = message.body().getString("consumer");
    AckRequest request = new AckRequest(message);
    if (request.missing == 0) {
      answer(request); // nothing to ask Redis (its batchAckIds were all malformed)
      return;
    }
    for (int i = 0; i < request.ackIds.size(); i++) {
      enqueue(name, new Item(request, false, i));
    }
    for (int i = 0; i < request.batchAckIds.size(); i++) {
      enqueue(name, new Item(request, true, i));
    }
  }

  private void enqueue(String name, Item item) {
    Integer acks = waitingAcks.get(name);
    if (acks != null && acks + item.acks() > MAX_ACKS_PER_CALL) {
      flush(name);
      acks = null;
    }
    if (acks == null) {
      waiting.put(name, new ArrayList<>());
      // items already queued on this event loop join the call before it is sent
      context.runOnContext(v -> flush(name));
    }
    waiting.get(name).add(item);
    waitingAcks.merge(name, item.acks(), Integer::sum);
  }

  private void flush(String name) {
    List<Item> items = waiting.remove(name);
    waitingAcks.remove(name);
    if (items != null) {
      call(name, items, SALT_RETRIES);
    }
  }

  /**
   * One script call for the items; the node reads the ackIds with the salt it knows of the
   * consumer, and the script tells when that is not the consumer's (then it is called again).
   */
  private void call(String name, List<Item> items, int retries) {
    String salt = salts.get(name);
    List<String> keys = new ArrayList<>(Keys.consumer(name));
    List<Item> named = new ArrayList<>();
    // UNKNOWN once the script confirmed that the salt they failed with is the consumer's
    List<Item> rejected = new ArrayList<>();
    List<Item> batches = new ArrayList<>();
    List<Object> args = new ArrayList<>();
    args.add(ConsumerSalts.fingerprint(salt));
    args.add(0);
    for (Item item : items) {
      if (item.batch()) {
        batches.add(item);
        keys.add(Keys.batch(name, item.id()));
        continue;
      }
      AckIds.Delivery delivery = salt == null ? null : AckIds.read(item.id(), salt);
      if (delivery == null && salt != null) {
        rejected.add(item);
        continue;
      }
      named.add(item);
      if (delivery != null) {
        args.add(delivery.eventId());
        args.add(delivery.entry());
        args.add(delivery.seq());
        args.add(delivery.size());
      }
    }
    args.set(1, salt == null ? 0 : named.size());
    args.add(MAX_ACKS_PER_CALL);
    args.add(items.stream().allMatch(item -> item.request().bySocket) ? "" : "1");
    store.eval(Script.ACK, keys, args).onComplete(done -> {
      if (done.failed()) {
        fail(items, ApiException.from(done.cause(), true));
        return;
      }
      Response reply = done.result();
      if (reply.type() != ResponseType.MULTI) {
        fail(items, ApiException.unknownConsumer(name));
        return;
      }
      if (reply.get(0).type() != ResponseType.MULTI) {
        // {-4, salt}: the ackIds were read with another salt than the consumer's
        salts.heard(name, reply.get(1).toString());
        if (retries == 0) {
          fail(items, ApiException.from(new IllegalStateException("the consumer's salt keeps changing"), true));
        } else {
          call(name, items, retries - 1);
        }
        return;
      }
      for (Item item : rejected) {
        item.request().statuses[item.index()] = "UNKNOWN"; // not an ackId this consumer gave out
        settled(item.request());
      }
      for (int i = 0; i < named.size(); i++) {
        Item item = named.get(i);
        item.request().statuses[item.index()] = reply.get(0).get(i).toString();
        settled(item.request());
      }
      // after the batches, the copies the consumer let go of
      Response letGo = reply.size() > batches.size() + 1 ? reply.get(batches.size() + 1) : null;
      copies.releaseAnswered(store, name, letGo, 0);
      for (int b = 0; b < batches.size(); b++) {
        Item item = batches.get(b);
        Response rows = reply.get(b + 1);
        if (rows.type() != ResponseType.MULTI) {
          enqueue(name, item); // left for another call: the script had done enough
        } else {
          item.request().batchRows[item.index()] = results(salt, rows);
          settled(item.request());
        }
      }
    });
  }

  /** A batch's rows as the script gives them (eventId, deliveries entry, status) as the protocol's results. */
  private static JsonArray results(String salt, Response rows) {
    JsonArray results = new JsonArray();
    for (int i = 0; i + 2 < rows.size(); i += 3) {
      String entry = rows.get(i + 1).toString();
      // an older version's batch holds the ackIds themselves, and then no entries
      String ackId = entry.isEmpty() ? rows.get(i).toString() : AckIds.ofEntry(salt, rows.get(i).toString(), entry);
      results.add(new JsonObject().put("ackId", ackId).put("status", rows.get(i + 2).toString()));
    }
    return results;
  }

  private static void fail(List<Item> items, ApiException failure) {
    for (Item item : items) {
      if (!item.request().over) {
        item.request().over = true;
        failure.failReply(item.request().message);
      }
    }
  }

  /** One more result of the request is in; once all are, it is answered. */
  private static void settled(AckRequest request) {
    if (--request.missing == 0) {
      answer(request);
    }
  }

  /** The request's results in its own order: its ackIds', then its batches' rows. */
  private static void answer(AckRequest request) {
    if (request.over) {
      return;
    }
    request.over = true;
    JsonArray results = new JsonArray();
    for (int i = 0; i < request.statuses.length; i++) {
      results.add(new JsonObject().put("ackId", request.ackIds.getValue(i)).put("status", request.statuses[i]));
    }
    for (int b = 0; b < request.batchRows.length; b++) {
      JsonArray rows = request.batchRows[b];
      if (rows.isEmpty()) {
        results.add(new JsonObject().put("batchAckId", request.batchAckIds.getValue(b)).put("status", "UNKNOWN"));
      }
      results.addAll(rows);
    }
    request.message.reply(new JsonObject().put("results", results));
  }
}
