package io.herald.admin;

import io.herald.consumer.ConsumerDirectory;
import io.herald.copy.Copies;
import io.herald.consumer.ConsumerSettings;
import io.herald.consumer.ConsumerStore;
import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.Requests;
import io.herald.protocol.TopicName;
import io.herald.settings.InvalidSettingsException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.redis.client.Response;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Consumer administration ({@code /v1/admin/consumers}) and consumer metadata. */
public final class ConsumerRoutes {
  private final RedisStore store;
  private final ConsumerDirectory directory;
  private final ConsumerStore consumers;

  public ConsumerRoutes(RedisStore store, ConsumerDirectory directory, Copies copies) {
    this.store = store;
    this.directory = directory;
    this.consumers = new ConsumerStore(store, copies);
  }

  public void mount(Router router) {
    router.get("/v1/admin/consumers").handler(this::list);
    router.get("/v1/admin/consumers/:consumer").handler(this::get);
    router.put("/v1/admin/consumers/:consumer").handler(this::put);
    router.delete("/v1/admin/consumers/:consumer").handler(this::delete);
    router.get("/v1/consumers/:consumer/metadata").handler(this::metadata);
  }

  private void list(RoutingContext ctx) {
    Responses.reply(ctx, () -> ApiException.reading(directory.reload()).map(ignored -> {
      JsonArray list = new JsonArray();
      new TreeMap<>(directory.all()).forEach((name, settings) -> list.add(describe(settings)));
      return new JsonObject().put("consumers", list);
    }));
  }

  private void get(RoutingContext ctx) {
    Responses.reply(ctx, () -> current(ctx).map(ConsumerRoutes::describe));
  }

  private void put(RoutingContext ctx) {
    String name = ctx.pathParam("consumer");
    if (!TopicName.isValidConsumer(name)) {
      Responses.error(ctx, ApiException.invalid("consumer", "consumer names are 1..128 characters of A-Z a-z 0-9 . _ -"));
      return;
    }
    ConsumerSettings settings;
    try {
      settings = ConsumerSettings.parse(name, Requests.object(ctx));
    } catch (InvalidSettingsException e) {
      Responses.error(ctx, e.toApiException(false));
      return;
    } catch (ApiException e) {
      Responses.error(ctx, e);
      return;
    }
    consumers.put(settings)
        .compose(created -> directory.reload(name).map(created))
        .onSuccess(created -> Responses.json(ctx, created ? 201 : 200, describe(settings)))
        .onFailure(failure -> Responses.error(ctx, ApiException.from(failure, true)));
  }

  private void delete(RoutingContext ctx) {
    String name = ctx.pathParam("consumer");
    consumers.delete(name)
        .compose(existed -> directory.reload(name).map(existed))
        .onSuccess(existed -> {
          if (existed) {
            ctx.response().setStatusCode(204).end();
          } else {
            Responses.error(ctx, ApiException.unknownConsumer(name));
          }
        })
        .onFailure(failure -> Responses.error(ctx, ApiException.from(failure, true)));
  }

  private void metadata(RoutingContext ctx) {
    Responses.reply(ctx, () -> current(ctx).compose(settings ->
        ApiException.reading(store.eval(Script.METADATA, Keys.consumer(settings.name()), List.of())).compose(reply -> {
          if (reply.type() != io.vertx.redis.client.ResponseType.MULTI) {
            return Future.failedFuture(ApiException.unknownConsumer(settings.name()));
          }
          return Future.succeededFuture(metadata(settings, reply));
        })));
  }

  private static JsonObject metadata(ConsumerSettings settings, Response reply) {
    Map<String, Long> r = new HashMap<>();
    for (int i = 0; i + 1 < reply.size(); i += 2) {
      r.put(reply.get(i).toString(), reply.get(i + 1).toLong());
    }
    long now = r.get("now");
    long oldestBacklog = r.get("oldestBacklogPublishedAt");
    long oldestUnacked = r.get("oldestUnackedFirstDelivery");
    long blockedUntil = r.get("blockedUntil") > now ? r.get("blockedUntil") : 0;
    JsonObject totals = new JsonObject();
    for (String total : List.of("published", "delivered", "acked", "redelivered", "deadLettered", "rejected",
        "dropped", "expired", "throttled", "blocks", "discarded")) {
      totals.put(total, r.get(total));
    }
    return new JsonObject()
        .put("consumer", settings.name())
        .put("backlog", r.get("backlog"))
        .put("unacked", r.get("unacked"))
        .put("stale", r.get("stale"))
        .put("scheduled", r.get("scheduled"))
        .put("oldestBacklogAgeMs", oldestBacklog < 0 ? 0 : Math.max(0, now - oldestBacklog))
        .put("oldestUnackedAgeMs", oldestUnacked < 0 ? 0 : Math.max(0, now - oldestUnacked))
        .put("delayed", r.get("delayed"))
        .put("waitingOnKey", r.get("waitingOnKey"))
        .put("deadLetters", r.get("deadLetters"))
        .put("errors", r.get("errors"))
        .put("spooledBytes", r.get("spooledBytes"))
        .put("spooledEvents", r.get("spooledEvents"))
        .put("throttle", new JsonObject().put("blocked", blockedUntil > 0)
            .put("blockedUntil", blockedUntil > 0 ? blockedUntil : null))
        .put("totals", totals)
        .put("config", settings.toJson());
  }

  /** The consumer as Redis has it now (not this node's possibly older copy). */
  private Future<ConsumerSettings> current(RoutingContext ctx) {
    String name = ctx.pathParam("consumer");
    return ApiException.reading(directory.reload(name)).compose(ignored -> {
      ConsumerSettings settings = directory.get(name);
      return settings == null ? Future.failedFuture(ApiException.unknownConsumer(name)) : Future.succeededFuture(settings);
    });
  }

  private static JsonObject describe(ConsumerSettings settings) {
    return new JsonObject().put("name", settings.name()).mergeIn(settings.toJson());
  }

}
