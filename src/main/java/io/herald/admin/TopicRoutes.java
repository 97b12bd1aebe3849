package io.herald.admin;

import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.protocol.Requests;
import io.herald.protocol.TopicName;
import io.herald.settings.InvalidSettingsException;
import io.herald.topic.TopicDirectory;
import io.herald.topic.TopicSettings;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Topic administration ({@code /v1/admin/topics}, the topic's levels as path segments). A topic
 * exists once published to; only those given settings are listed.
 */
public final class TopicRoutes {
  private static final Pattern TOPIC = Pattern.compile("/v1/admin/topics/(?<topic>.+)");
  private final TopicDirectory topics;

  public TopicRoutes(TopicDirectory topics) {
    this.topics = topics;
  }

  public void mount(Router router) {
    router.get("/v1/admin/topics").handler(this::list);
    router.getWithRegex(TOPIC.pattern()).handler(this::get);
    router.putWithRegex(TOPIC.pattern()).handler(this::put);
    router.deleteWithRegex(TOPIC.pattern()).handler(this::delete);
  }

  private void list(RoutingContext ctx) {
    Responses.reply(ctx, () -> ApiException.reading(topics.reload()).map(ignored -> {
      JsonArray list = new JsonArray();
      new TreeMap<>(topics.configured()).forEach((name, settings) -> list.add(describe(settings)));
      return new JsonObject().put("topics", list);
    }));
  }

  private void get(RoutingContext ctx) {
    Responses.reply(ctx, () -> {
      String topic = topic(ctx);
      return ApiException.reading(topics.reload(topic)).map(ignored -> describe(topics.get(topic)));
    });
  }

  private void put(RoutingContext ctx) {
    Responses.reply(ctx, () -> {
      String topic = topic(ctx);
      TopicSettings settings;
      try {
        settings = TopicSettings.parse(topic, Requests.object(ctx));
      } catch (InvalidSettingsException e) {
        throw e.toApiException(false);
      }
      return topics.put(settings).map(ignored -> describe(settings));
    });
  }

  private void delete(RoutingContext ctx) {
    String topic;
    try {
      topic = topic(ctx);
    } catch (ApiException e) {
      Responses.error(ctx, e);
      return;
    }
    topics.delete(topic).onComplete(done -> {
      if (done.failed()) {
        Responses.error(ctx, ApiException.from(done.cause(), true));
      } else if (done.result()) {
        ctx.response().setStatusCode(204).end();
      } else {
        Responses.error(ctx, new ApiException(ErrorCode.NOT_FOUND, "Topic '" + topic + "' has no settings of its own",
            new JsonObject().put("topic", topic)));
      }
    });
  }

  private static String topic(RoutingContext ctx) {
    String topic = Requests.rawPathGroup(ctx, TOPIC, "topic");
    String problem = TopicName.isSystem(topic) ? "topics under $sys/ are the gateway's own" : TopicName.problem(topic);
    if (problem != null) {
      throw ApiException.invalid("topic", problem);
    }
    return topic;
  }

  private static JsonObject describe(TopicSettings settings) {
    return new JsonObject().put("topic", settings.name()).mergeIn(settings.toJson());
  }
}
