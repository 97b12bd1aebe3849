package io.herald.publish;

import io.herald.auth.Authentication;
import io.herald.http.Responses;
import io.herald.protocol.Requests;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import java.util.regex.Pattern;

/** {@code POST /v1/topics/{topic}/events}: one event or {@code {"events":[...]}}, answered once stored. */
public final class PublishRoutes {
  /** Its topic is read from the path as sent (see {@link Requests#rawPathGroup}). */
  private static final Pattern PUBLISH_PATH = Pattern.compile("/v1/topics/(?<topic>.+)/events");

  private final PublishService publisher;

  public PublishRoutes(PublishService publisher) {
    this.publisher = publisher;
  }

  public void mount(Router router) {
    router.postWithRegex(PUBLISH_PATH.pattern()).handler(this::publish);
  }

  private void publish(RoutingContext ctx) {
    Buffer body = ctx.body().buffer();
    Responses.reply(ctx, () -> {
      String topic = Requests.rawPathGroup(ctx, PUBLISH_PATH, "topic");
      Authentication.caller(ctx).checkPublish(topic);
      return publisher.publish(topic, body == null ? Buffer.buffer() : body);
    });
  }
}
