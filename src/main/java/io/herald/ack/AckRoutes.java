package io.herald.ack;

import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.http.Responses;
import io.herald.protocol.Requests;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.function.BiFunction;

/**
 * {@code POST /v1/consumers/{consumer}/acks|nacks|extend}. Acks, nacks and extends of a disabled
 * consumer still settle what it was given.
 */
public final class AckRoutes {
  private final Acks acks;
  private final Settlements settlements;
  private final ConsumerDirectory directory;

  public AckRoutes(Acks acks, Settlements settlements, ConsumerDirectory directory) {
    this.acks = acks;
    this.settlements = settlements;
    this.directory = directory;
  }

  public void mount(Router router) {
    router.post("/v1/consumers/:consumer/acks").handler(this::ack);
    router.post("/v1/consumers/:consumer/nacks").handler(ctx -> settle(ctx, Settlements.NACK_FIELDS, (consumer, body) -> settlements.nack(consumer, body, false)));
    router.post("/v1/consumers/:consumer/extend").handler(ctx -> settle(ctx, Settlements.EXTEND_FIELDS, settlements::extend));
  }

  private void ack(RoutingContext ctx) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      JsonArray ackIds = Requests.strings(body, "ackIds", Acks.MAX_ACK_IDS);
      JsonArray batchAckIds = Requests.strings(body, "batchAckIds", Acks.MAX_BATCH_ACK_IDS);
      Requests.onlyFields(body, "ackIds", "batchAckIds");
      return consumer(ctx).compose(consumer -> acks.ack(consumer, ackIds, batchAckIds, false));
    });
  }

  /** A nack or extend: the body checked, the consumer known, then {@code action}. */
  private void settle(RoutingContext ctx, String[] fields, BiFunction<String, JsonObject, Future<JsonObject>> action) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      Requests.onlyFields(body, fields);
      return consumer(ctx).compose(consumer -> action.apply(consumer.name(), body));
    });
  }

  private Future<ConsumerSettings> consumer(RoutingContext ctx) {
    return directory.require(ctx.pathParam("consumer"));
  }
}
