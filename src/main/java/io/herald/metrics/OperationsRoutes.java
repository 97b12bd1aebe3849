package io.herald.metrics;

import io.herald.http.Responses;
import io.herald.lifecycle.Drain;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.RedisStore;
import io.vertx.core.Handler;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;

/** {@code /health/live}, {@code /health/ready} and {@code /metrics}, on the API's listener and the management one. */
public final class OperationsRoutes {
  private static final String TEXT = "text/plain; version=0.0.4; charset=utf-8";
  private static final String OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8";
  private final RedisStore store;
  private final Drain drain;
  private final HeraldMetrics metrics;

  public OperationsRoutes(RedisStore store, Drain drain, HeraldMetrics metrics) {
    this.store = store;
    this.drain = drain;
    this.metrics = metrics;
  }

  /** The probes: they need no credentials. */
  public void mountHealth(Router router) {
    router.get("/health/live").handler(ctx -> Responses.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
  }

  /** {@code /metrics} behind {@code guard} (the API's listener asks for an admin grant where credentials are configured). */
  public void mountMetrics(Router router, Handler<RoutingContext> guard) {
    router.get("/metrics").handler(guard).handler(this::scrape);
  }

  /**
   * The registry in the Prometheus text format, or OpenMetrics when asked for. Written off the event
   * loop: with thousands of consumers the text is megabytes, and the loop serves the API.
   */
  private void scrape(RoutingContext ctx) {
    metrics.scraped();
    String accept = ctx.request().getHeader(HttpHeaders.ACCEPT);
    String type = accept != null && accept.contains("application/openmetrics-text") ? OPENMETRICS : TEXT;
    ctx.vertx().executeBlocking(() -> metrics.registry().scrape(type), false).onComplete(done -> {
      if (done.failed()) {
        ctx.fail(done.cause());
      } else {
        ctx.response().putHeader(HttpHeaders.CONTENT_TYPE, type).end(done.result());
      }
    });
  }

  /** Ready while Redis serves (on a cluster: a primary says its state is ok) and the node is not draining. */
  private void ready(RoutingContext ctx) {
    if (drain.draining()) {
      Responses.error(ctx, Drain.refusal());
      return;
    }
    store.serving(false).onComplete(done -> {
      if (done.succeeded()) {
        Responses.json(ctx, 200, new JsonObject().put("status", "UP"));
      } else {
        Responses.error(ctx, new ApiException(ErrorCode.STORE_UNAVAILABLE,
            "Redis does not serve: " + done.cause().getMessage()));
      }
    });
  }
}
