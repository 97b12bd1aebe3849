package io.herald.ack;

import io.herald.Addresses;
import io.herald.http.ApiException;
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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The ack tracker: takes ack requests from every HTTP and WebSocket verticle of the node and
 * coalesces those that arrive together for one consumer into a single script call, so a consumer
 * acking event by event costs Redis one round trip per burst, not per ack.
 *
 * <p>Request: {@code {"consumer":..., "ackIds":[...], "batchAckIds":[...]}}; reply: the protocol's
 * {@code {"results":[...]}}; failure code: an {@code ErrorCode} ordinal.
 */
public final class AckTrackerVerticle extends VerticleBase {
  /** Most ackIds in one script call; a burst larger than this is split. */
  static final int MAX_ACKS_PER_CALL = 2000;

  private final Supplier<RedisStore> stores;
  private RedisStore store;
  private MessageConsumer<JsonObject> consumer;
  private final Map<String, List<Message<JsonObject>>> waiting = new HashMap<>();
  private final Map<String, Integer> waitingAcks = new HashMap<>();

  public AckTrackerVerticle(Supplier<RedisStore> stores) {
    this.stores = stores;
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

  private void onRequest(Message<JsonObject> request) {
    String name = request.body().getString("consumer");
    int acks = request.body().getJsonArray("ackIds").size() + request.body().getJsonArray("batchAckIds").size();
    List<Message<JsonObject>> queue = waiting.get(name);
    if (queue == null) {
      queue = new ArrayList<>();
      waiting.put(name, queue);
      // requests already queued on this event loop join the call before it is sent
      context.runOnContext(v -> flush(name));
    }
    queue.add(request);
    if (waitingAcks.merge(name, acks, Integer::sum) >= MAX_ACKS_PER_CALL) {
      flush(name);
    }
  }

  private void flush(String name) {
    List<Message<JsonObject>> requests = waiting.remove(name);
    waitingAcks.remove(name);
    if (requests == null) {
      return;
    }
    List<String> keys = new ArrayList<>(Keys.consumer(name));
    List<Object> ackIds = new ArrayList<>();
    ackIds.add(0);
    for (Message<JsonObject> request : requests) {
      request.body().getJsonArray("ackIds").forEach(ackIds::add);
      for (Object batchAckId : request.body().getJsonArray("batchAckIds")) {
        keys.add(Keys.batch(name, (String) batchAckId));
      }
    }
    ackIds.set(0, ackIds.size() - 1);
    store.eval(Script.ACK, keys, ackIds).onComplete(done -> {
      if (done.failed()) {
        ApiException failure = ApiException.from(done.cause(), true);
        requests.forEach(r -> r.fail(failure.code().ordinal(), failure.getMessage()));
      } else if (done.result().type() != io.vertx.redis.client.ResponseType.MULTI) {
        ApiException unknown = ApiException.unknownConsumer(name);
        requests.forEach(r -> r.fail(unknown.code().ordinal(), unknown.getMessage()));
      } else {
        answer(requests, done.result());
      }
    });
  }

  /** Splits the script's answer back into one result list per request, in request order. */
  private static void answer(List<Message<JsonObject>> requests, Response reply) {
    Response statuses = reply.get(0);
    int nextStatus = 0;
    int nextBatch = 1;
    for (Message<JsonObject> request : requests) {
      JsonArray results = new JsonArray();
      for (Object ackId : request.body().getJsonArray("ackIds")) {
        results.add(new JsonObject().put("ackId", ackId).put("status", statuses.get(nextStatus++).toString()));
      }
      for (Object batchAckId : request.body().getJsonArray("batchAckIds")) {
        Response rows = reply.get(nextBatch++);
        if (rows.size() == 0) {
          results.add(new JsonObject().put("batchAckId", batchAckId).put("status", "UNKNOWN"));
        }
        for (int i = 0; i < rows.size(); i += 2) {
          results.add(new JsonObject().put("ackId", rows.get(i).toString()).put("status", rows.get(i + 1).toString()));
        }
      }
      request.reply(new JsonObject().put("results", results));
    }
  }
}
