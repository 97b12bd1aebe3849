package io.herald.delivery;

import io.herald.consumer.ConsumerDirectory;
import io.herald.http.Responses;
import io.herald.protocol.Requests;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/** {@code POST|GET /v1/consumers/{consumer}/poll}: a batch, at once or after a long poll's wait. */
public final class PollRoutes {
  static final long MAX_WAIT_MS = 20_000;

  private final PollService poller;
  private final ConsumerDirectory directory;

  public PollRoutes(PollService poller, ConsumerDirectory directory) {
    this.poller = poller;
    this.directory = directory;
  }

  public void mount(Router router) {
    router.post("/v1/consumers/:consumer/poll").handler(this::poll);
    router.get("/v1/consumers/:consumer/poll").handler(this::poll);
  }

  private void poll(RoutingContext ctx) {
    Responses.replyBuffer(ctx, () -> {
      JsonObject body = ctx.request().method().name().equals("GET") ? queryParameters(ctx) : Requests.object(ctx);
      Long maxEvents = Requests.integer(body, "maxEvents", 1, 1000);
      Long waitMs = Requests.integer(body, "waitMs", 0, MAX_WAIT_MS);
      Requests.onlyFields(body, "maxEvents", "waitMs");
      return directory.requireEnabled(ctx.pathParam("consumer")).compose(consumer -> {
        PollService.Poll poll = poller.poll(consumer, maxEvents == null ? consumer.maxPollRecords() : maxEvents.intValue(),
            waitMs == null ? 0 : waitMs, true, "http");
        ctx.response().closeHandler(v -> poll.stop());
        if (ctx.response().closed()) {
          poll.stop();
        }
        return poll.answer();
      }).map(Batch::json);
    });
  }

  private static JsonObject queryParameters(RoutingContext ctx) {
    JsonObject query = new JsonObject();
    ctx.queryParams().forEach((name, value) -> {
      try {
        query.put(name, Long.parseLong(value));
      } catch (NumberFormatException e) {
        query.put(name, value);
      }
    });
    return query;
  }
}
