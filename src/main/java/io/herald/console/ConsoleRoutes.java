package io.herald.console;

import io.herald.Addresses;
import io.herald.lifecycle.Drain;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The web console: its page at {@code /console/} (static files from the jar, no data in them, so
 * they need no credentials), and {@code GET /v1/admin/live}, the server-sent events that keep it
 * live. Everything else the page shows it reads from the admin API with the credentials it is given.
 *
 * <p>A live stream gets an {@code figures} event after each pass of the node's consumer figures
 * (see {@code ConsumerGauges}): every consumer's counts and rates, and the gateway's spool and
 * unacked alerts. A stream that cannot take an event (its write queue full) misses it, as the next
 * replaces it. A draining node ends its streams, and the page reconnects to another node.
 */
public final class ConsoleRoutes {
  /** Where the page's files are in the jar: a path no working directory is likely to hold. */
  private static final String ASSETS = "io/herald/console";
  /** A comment line on quiet streams, well inside the connections' idle timeout (30 s at least). */
  private static final long KEEPALIVE_MS = 15_000;
  private static final long LOOK_MS = 1_000;
  private static final String SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; "
      + "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private final Vertx vertx;
  private final ConsoleWatchers watchers;
  private final Drain drain;
  private final Supplier<Future<JsonObject>> stats;
  /** The open streams of this verticle instance; only its event loop touches them. */
  private final Set<HttpServerResponse> streams = new LinkedHashSet<>();
  /** The latest event, for streams that open between two passes. */
  private String lastEvent;
  private long quietSince = System.nanoTime();

  /** @param stats reads the gateway's spool and unacked figures ({@code GET /v1/admin/stats}) */
  public ConsoleRoutes(Vertx vertx, ConsoleWatchers watchers, Drain drain, Supplier<Future<JsonObject>> stats) {
    this.vertx = vertx;
    this.watchers = watchers;
    this.drain = drain;
    this.stats = stats;
  }

  /** The page's files: public, as they hold no data. */
  public void mountPage(Router router) {
    // the router matches /console/ here too
    router.get("/console").handler(ctx -> {
      if (ctx.request().path().endsWith("/")) {
        ctx.next();
      } else {
        ctx.redirect("/console/");
      }
    });
    router.get("/console/*").handler(ConsoleRoutes::securityHeaders)
        .handler(StaticHandler.create(ASSETS).setIndexPage("index.html").setCachingEnabled(false));
  }

  /**
   * The live stream, behind {@code guards} (credentials and an admin grant). It is not counted as a
   * request in flight: it never ends on its own, and a draining node ends it.
   */
  @SafeVarargs
  public final void mountLive(Router router, Handler<RoutingContext>... guards) {
    var route = router.get("/v1/admin/live");
    for (Handler<RoutingContext> guard : guards) {
      route.handler(guard);
    }
    route.handler(this::live);
    vertx.eventBus().<String>localConsumer(Addresses.CONSOLE_FIGURES, message -> figures(message.body()));
    vertx.setPeriodic(LOOK_MS, t -> look());
  }

  private static void securityHeaders(RoutingContext ctx) {
    ctx.response().putHeader("Content-Security-Policy", SECURITY_POLICY)
        .putHeader("X-Content-Type-Options", "nosniff").putHeader("Referrer-Policy", "no-referrer")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-cache");
    ctx.next();
  }

  private void live(RoutingContext ctx) {
    HttpServerResponse response = ctx.response();
    response.setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-store").putHeader("X-Accel-Buffering", "no");
    streams.add(response);
    watchers.opened();
    response.closeHandler(closed -> forget(response)).exceptionHandler(failed -> forget(response));
    // the browser's retry delay if the stream drops; then the latest figures, if any yet
    response.write("retry: 2000\n\n");
    if (lastEvent != null) {
      response.write(lastEvent);
    }
  }

  private void forget(HttpServerResponse response) {
    if (streams.remove(response)) {
      watchers.closed();
    }
  }

  /** A pass's figures: sent with the gateway's alerts, read once for all of this instance's streams. */
  private void figures(String consumers) {
    if (streams.isEmpty()) {
      lastEvent = null;
      return;
    }
    stats.get().map(JsonObject::encode).otherwise("null").onSuccess(gateway -> {
      // {"stats":…, then the pass's fields: one JSON object on one data line
      lastEvent = "event: figures\ndata: {\"stats\":" + gateway + "," + consumers.substring(1) + "\n\n";
      for (HttpServerResponse response : List.copyOf(streams)) {
        if (!response.writeQueueFull()) {
          response.write(lastEvent);
        }
      }
      quietSince = System.nanoTime();
    });
  }

  private void look() {
    if (streams.isEmpty()) {
      return;
    }
    if (drain.draining()) {
      List.copyOf(streams).forEach(response -> {
        forget(response);
        response.end();
      });
    } else if (System.nanoTime() - quietSince >= KEEPALIVE_MS * 1_000_000) {
      streams.forEach(response -> response.write(": keepalive\n\n"));
      quietSince = System.nanoTime();
    }
  }
}
