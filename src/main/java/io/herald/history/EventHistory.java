package io.herald.history;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerScripts;
import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.redis.client.Response;
import java.util.List;

/**
 * {@code GET /v1/consumers/{consumer}/events/{eventId}}: the event's state and every delivery with
 * its outcome, from the history the scripts note as things happen to it (kept while the event is
 * held and 10 minutes after it left), so "why did this end in the dead-letter queue?" is one request.
 */
public final class EventHistory {
  private final RedisStore store;
  private final ConsumerDirectory directory;

  public EventHistory(RedisStore store, ConsumerDirectory directory) {
    this.store = store;
    this.directory = directory;
  }

  public void mount(Router router) {
    router.get("/v1/consumers/:consumer/events/:eventId").handler(this::get);
  }

  private void get(RoutingContext ctx) {
    String consumer = ctx.pathParam("consumer");
    String eventId = ctx.pathParam("eventId");
    Responses.reply(ctx, () -> directory.require(consumer)
        .compose(found -> ConsumerScripts.run(store, Script.HISTORY, consumer, Keys.history(consumer, eventId),
            List.of(eventId), false))
        .compose(reply -> {
          if (reply.size() == 0) {
            return Future.failedFuture(new ApiException(ErrorCode.NOT_FOUND,
                "Consumer '" + consumer + "' holds no event " + eventId + " and has no recent history of it",
                new JsonObject().put("eventId", eventId)));
          }
          return Future.succeededFuture(describe(eventId, reply));
        }));
  }

  /** Reads the entries ("<kind> <time> ...") into deliveries, each with its outcome. */
  static JsonObject describe(String eventId, Response reply) {
    JsonObject event = new JsonObject().put("eventId", eventId).put("state", reply.get(0).toString());
    JsonArray deliveries = new JsonArray();
    JsonObject current = null;
    for (int i = 1; i < reply.size(); i++) {
      String line = reply.get(i).toString();
      // a nack's reason, last, may hold spaces; a hand-out ends with its call's mark
      String[] entry = line.split(" ", line.startsWith("N ") ? 4 : 7);
      long at = Long.parseLong(entry[1]);
      switch (entry[0]) {
        case "D" -> {
          current = new JsonObject().put("deliveryCount", Integer.parseInt(entry[2])).put("handedOutAt", at)
              .put("ackDeadline", entry[3].equals("-") ? null : Long.valueOf(entry[3]))
              .put("node", entry[4]).put("connection", entry[5]).putNull("outcome");
          deliveries.add(current);
        }
        case "A" -> outcome(current, "ACKED", at);
        case "X" -> outcome(current, "DEADLINE_MISSED", at);
        case "E" -> {
          if (current != null) {
            current.put("ackDeadline", Long.valueOf(entry[2]));
          }
        }
        case "N" -> {
          outcome(current, entry[2].equals("REJECT") ? "REJECTED" : "REQUEUED", at);
          if (current != null && entry.length > 3 && !entry[3].isBlank()) {
            current.put("reason", entry[3]);
          }
        }
        case "F" -> {
          // a copy lost (lost_copy.lua) drops the event without a dead-letter reason
          if (!entry[2].equals("REJECTED") && !entry[2].equals("COPY_LOST")) {
            event.put("deadLetterReason", entry[2]).put("deadLetteredAt", at);
            if (current != null && current.getValue("outcome") == null) {
              outcome(current, entry[2], at);
            }
          }
          if (entry.length > 3) {
            event.put("droppedAt", at);
          }
        }
        case "R" -> {
          event.put("redrivenAt", at);
          current = null;
        }
        case "L" -> event.put("expiredAt", at);
        case "T" -> {
          // the entries between the first and the ones after this went (an event's list is bounded)
          event.put("omittedEntries", Long.parseLong(entry[2]));
          current = null;
        }
        case "K" -> event.put("heldBack", "ORDERING").put("waitingBehind", entry[2]);
        default -> { }
      }
    }
    return event.put("deliveries", deliveries);
  }

  private static void outcome(JsonObject delivery, String outcome, long at) {
    if (delivery != null) {
      delivery.put("outcome", outcome).put("outcomeAt", at);
    }
  }
}
