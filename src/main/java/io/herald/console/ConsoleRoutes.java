package io.herald.console;

import io.herald.Addresses;
import io.herald.lifecycle.Drain;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.StaticHandler;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The web console: its page at {@code /console/} (static files from the jar, no data in them, so
 * they need no credentials), and {@code GET /v1/admin/live}, the server-sent events that keep it
 * live. Everything else the page shows it reads from the admin API with the credentials it is given.
 *
 * <p>A live stream gets a {@code figures} event after each pass of the node's consumer figures
 * (see {@code ConsumerGauges}): every consumer's counts and rates, and the gateway's spool and
 * unacked alerts. A stream that cannot take an event (its write queue full) misses it, as the next
 * replaces it. A draining node ends its streams, and the page reconnects to another node. A stream
 * also ends after {@value #STREAM_MS} ms, and the page opens another: its credentials are checked
 * again, so a token that expired or was revoked stops the console within that time.
 */
public final class ConsoleRoutes {
  /** Where the page's files are in the jar: a path no working directory is likely to hold. */
  private static final String ASSETS = "io/herald/console";
  /** A comment line on quiet streams, well inside the connections' idle timeout (30 s at least). */
  private static final long KEEPALIVE_MS = 15_000;
  private static final long LOOK_MS = 1_000;
  private static final long STREAM_MS = 300_000;
  private static final String SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; "
      + "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private final Vertx vertx;
  private final ConsoleWatchers watchers;
  private final Drain drain;
  private final Supplier<Future<JsonObject>> stats;

  /** An open live stream: its request, and when it opened. */
  private record Stream(HttpServerRequest request, long openedAt) {}
  /** The open streams of this verticle instance; only its event loop touches them. */
  private final Map<HttpServerResponse, Stream> streams = new LinkedHashMap<>();
  /** The latest event, for streams that open between two passes. */
  private String lastEvent;
  /** Passes' figures in the order they came, so that a slow read of the alerts never sends older figures after newer. */
  private long figuresCame;
  private long figuresSent;
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
    if (response.closed()) {
      // gone while its credentials were checked
      return;
    }
    response.setChunked(true).putHeader(HttpHeaders.CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .putHeader(HttpHeaders.CACHE_CONTROL, "no-store").putHeader("X-Accel-Buffering", "no");
    streams.put(response, new Stream(ctx.request(), System.nanoTime()));
    watchers.opened();
    response.closeHandler(closed -> forget(response)).exceptionHandler(failed -> end(response));
    // the browser's retry delay if the stream drops; then the latest figures, if any yet
    response.write("retry: 2000\n\n");
    if (lastEvent != null) {
      response.write(lastEvent);
    }
  }

  private void forget(HttpServerResponse response) {
    if (streams.remove(response) != null) {
      watchers.closed();
    }
  }

  /** Ends a stream; while the node drains, its HTTP/1 connection too, or the page would reconnect on it. */
  private void end(HttpServerResponse response) {
    Stream stream = streams.get(response);
    forget(response);
    if (!response.closed()) {
      response.end();
    }
    if (stream != null && drain.draining() && stream.request().version() != HttpVersion.HTTP_2) {
      stream.request().connection().close();
    }
  }

  /** A pass's figures: sent with the gateway's alerts, read once for all of this instance's streams. */
  private void figures(String consumers) {
    if (streams.isEmpty()) {
      lastEvent = null;
      return;
    }
    long order = ++figuresCame;
    stats.get().map(JsonObject::encode).otherwise("null").onSuccess(gateway -> {
      if (order < figuresSent) {
        // newer figures went out while the alerts of these were read
        return;
      }
      figuresSent = order;
      // {"stats":…, then the pass's fields: one JSON object on one data line
      lastEvent = "event: figures\ndata: {\"stats\":" + gateway + "," + consumers.substring(1) + "\n\n";
      write(lastEvent);
    });
  }

  /** To every stream that can take it: one whose write queue is full misses it (the next replaces it). */
  private void write(String event) {
    for (HttpServerResponse response : List.copyOf(streams.keySet())) {
      if (!response.writeQueueFull()) {
        response.write(event);
      }
    }
    quietSince = System.nanoTime();
  }

  private void look() {
    if (streams.isEmpty()) {
      return;
    }
    long now = System.nanoTime();
    streams.entrySet().stream()
        .filter(open -> drain.draining() || now - open.getValue().openedAt() >= STREAM_MS * 1_000_000)
        .map(Map.Entry::getKey).toList().forEach(this::end);
    if (now - quietSince >= KEEPALIVE_MS * 1_000_000) {
      write(": keepalive\n\n");
    }
  }
}
