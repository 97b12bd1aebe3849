package io.herald.http;

import io.herald.Addresses;
import io.herald.ack.AckRoutes;
import io.herald.admin.ConsumerRoutes;
import io.herald.admin.StatsRoutes;
import io.herald.admin.TopicRoutes;
import io.herald.auth.Authentication;
import io.herald.auth.Authenticator;
import io.herald.config.HeraldConfig;
import io.herald.console.ConsoleRoutes;
import io.herald.console.ConsoleWatchers;
import io.herald.consumer.ConsumerDirectory;
import io.herald.contract.ContractRoutes;
import io.herald.deadletter.FailedEventRoutes;
import io.herald.delivery.PollRoutes;
import io.herald.delivery.PollService;
import io.herald.history.EventHistory;
import io.herald.lifecycle.Drain;
import io.herald.metrics.HeraldMetrics;
import io.herald.metrics.OperationsRoutes;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.publish.PublishRoutes;
import io.herald.quota.SpoolLedger;
import io.herald.store.RedisStore;
import io.herald.topic.TopicDirectory;
import io.herald.vertx.VertxInternals;
import io.herald.ws.OriginCheck;
import io.herald.ws.WebSocketGateway;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.Http2Settings;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Route;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The HTTP API: routes publish, poll, ack, consumer metadata, administration, health, the console
 * and the WebSocket upgrades to the services it is given. Several instances share the port; each has its
 * own services ({@link ApiServices}: its Redis connection, its publish rounds, its parked long polls).
 */
public final class HttpApiVerticle extends VerticleBase {

  private final ApiServices services;
  private final ConsumerDirectory directory;
  private final TopicDirectory topics;
  private final SpoolLedger ledger;
  private final String host;
  private final int port;
  private final HeraldConfig.Http http;
  private final Authentication authentication;
  private final HeraldMetrics metrics;
  private final ConsoleWatchers watchers;
  private HttpServer server;
  /** Every route that answers a request, as "METHOD path" (the router's own paths), for the contract's test. */
  private List<String> routes = List.of();

  /** {@code host} and {@code port}: what it listens on. */
  public HttpApiVerticle(ApiServices services, ConsumerDirectory directory, TopicDirectory topics, SpoolLedger ledger,
      String host, int port, HeraldConfig.Http http, Authenticator authenticator, HeraldMetrics metrics,
      ConsoleWatchers watchers) {
    this.services = services;
    this.metrics = metrics;
    this.watchers = watchers;
    this.directory = directory;
    this.topics = topics;
    this.ledger = ledger;
    this.host = host;
    this.port = port;
    this.http = http;
    this.authentication = new Authentication(authenticator);
  }

  @Override
  public Future<?> start() {
    RedisStore store = services.store();
    PollService poller = services.poller();
    WebSocketGateway sockets = services.sockets();
    vertx.eventBus().<String>localConsumer(Addresses.wake(services.waiterPrefix()), message -> poller.wake(message.body()));
    vertx.eventBus().localConsumer(Addresses.WAKE_ALL, message -> poller.wakeAll());
    vertx.eventBus().<String>localConsumer(Addresses.BLOCKED, message -> {
      String[] block = message.body().split(" ");
      sockets.blocked(block[0], Long.parseLong(block[1]));
    });

    Router router = Router.router(vertx);
    OriginCheck origins = new OriginCheck(http.allowedOrigins());
    router.route().handler(new CrossOriginRequests(origins));
    OperationsRoutes operations = new OperationsRoutes(store, services.drain(), metrics);
    operations.mountHealth(router);
    StatsRoutes stats = new StatsRoutes(store, ledger);
    ConsoleRoutes console = new ConsoleRoutes(vertx, watchers, services.drain(), stats::read);
    console.mountPage(router);
    new ContractRoutes().mount(router);
    // before the count of requests in flight: a live stream lasts until the console closes, or
    // until the node drains, which ends it
    console.mountLive(router, this::refusedWhileDraining, authentication, Authentication::requireAdmin);
    // before the body handler: an upgrade request's connection becomes the socket. Credentials, the
    // consumer and its rate limit are checked first, so a refused upgrade is an HTTP answer in the
    // handshake; the request stays paused meanwhile, as an upgrade needs it unread.
    router.get("/v1/consumers/:consumer/ws").handler(HttpApiVerticle::pause).handler(this::refusedWhileDraining)
        .handler(origins).handler(authentication)
        .handler(Authentication::requireConsume).handler(this::consumerSocket);
    router.get("/v1/ws/publish").handler(HttpApiVerticle::pause).handler(this::refusedWhileDraining)
        .handler(origins).handler(authentication)
        .handler(sockets::acceptPublisher);
    // every other request is waited for by a draining node (acks and reads finish; publishes and
    // polls are refused by their services)
    Drain drain = services.drain();
    router.route().handler(ctx -> {
      drain.count();
      ctx.addEndHandler(done -> {
        drain.leave();
        if (drain.draining() && ctx.request().version() != HttpVersion.HTTP_2) {
          // a kept-alive HTTP/1 connection would bring the client back here: it reconnects, to
          // another node (an HTTP/2 one stays until the server closes: its client may not retry
          // a request a GOAWAY cut)
          ctx.request().connection().close();
        }
      });
      ctx.next();
    });
    router.route().handler(BodyHandler.create(false).setBodyLimit(http.maxBodyBytes()));
    // after the body handler, which must see the request's first bytes
    router.route().handler(authentication);
    operations.mountMetrics(router, Authentication::requireAdmin);
    router.route("/v1/admin/*").handler(Authentication::requireAdmin);
    router.routeWithRegex("/v1/consumers/(?<consumer>[^/]+)/.+").handler(Authentication::requireConsume);
    new PublishRoutes(services.publisher()).mount(router);
    new PollRoutes(poller, directory).mount(router);
    new AckRoutes(services.acks(), services.settlements(), directory).mount(router);
    new ConsumerRoutes(store, directory, services.copies()).mount(router);
    new TopicRoutes(topics).mount(router);
    stats.mount(router);
    new FailedEventRoutes(vertx, store, directory, ledger, services.settler(), services.copies()).mount(router);
    new EventHistory(store, directory).mount(router);
    router.route().failureHandler(Responses::failure);
    router.errorHandler(404, ctx -> Responses.error(ctx, new ApiException(ErrorCode.NOT_FOUND,
        "No route " + ctx.request().method() + " " + ctx.request().path())));
    router.errorHandler(405, ctx -> Responses.error(ctx, new ApiException(ErrorCode.METHOD_NOT_ALLOWED,
        "Method " + ctx.request().method() + " is not allowed on " + ctx.request().path())));

    routes = endpoints(router);
    server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port)
        .setCompressionSupported(false)
        .setMaxWebSocketFrameSize((int) http.maxFrameBytes()).setMaxWebSocketMessageSize((int) http.maxFrameBytes())
        // after a close frame, wait 2 s for the peer's (not 10): a dead peer must not hold the socket
        .setWebSocketClosingTimeout(2)
        .setIdleTimeout((int) http.idleTimeoutMs()).setIdleTimeoutUnit(TimeUnit.MILLISECONDS)
        .setHttp2ClearTextEnabled(http.h2c())
        // HTTP/2 (h2c) requests get the same header limit as HTTP/1.1 ones (refused by the HTTP/2 layer)
        .setInitialSettings(new Http2Settings().setMaxHeaderListSize(HttpServerOptions.DEFAULT_MAX_HEADER_SIZE)));
    return server.connectionHandler(VertxInternals::consolidateFlushes)
        .invalidRequestHandler(HttpApiVerticle::invalidRequest).requestHandler(router).listen()
        .recover(failure -> Future.failedFuture(new IllegalStateException("cannot listen on " + host + ":" + port
            + " (http.host, http.port / HERALD_HTTP_PORT): " + Objects.toString(failure.getMessage(), failure.toString()), failure)));
  }

  @Override
  public Future<?> stop() {
    // sockets first, with 1001, so clients know to reconnect elsewhere; unacked deliveries come
    // back at their deadlines, acks already answered are stored
    return services.sockets().closeAll().eventually(server::close).eventually(services.store()::close);
  }

  /** The routes, by method and path, that answer requests (not those that only guard or count them). */
  public List<String> routes() {
    return routes;
  }

  private static List<String> endpoints(Router router) {
    List<String> endpoints = new ArrayList<>();
    for (Route route : router.getRoutes()) {
      if (route.methods() == null || route.methods().isEmpty()) {
        continue;
      }
      String path = route.getPath() != null ? route.getPath() : route.getName();
      route.methods().forEach(method -> endpoints.add(method.name() + " " + path));
    }
    return endpoints;
  }

  private void consumerSocket(RoutingContext ctx) {
    directory.requireEnabled(ctx.pathParam("consumer")).onComplete(found -> {
      if (found.failed()) {
        Responses.error(ctx, ApiException.from(found.cause(), false));
      } else {
        services.sockets().acceptConsumer(ctx, found.result());
      }
    });
  }

  /**
   * A request the HTTP decoder refused (request line or headers over their limits, not HTTP):
   * answered in the error envelope, then the connection is closed, as its stream cannot be trusted.
   */
  private static void invalidRequest(HttpServerRequest request) {
    Throwable cause = request.decoderResult().cause();
    ApiException error = cause instanceof TooLongHttpLineException
        ? ApiException.invalid("uri", "the request line is over " + HttpServerOptions.DEFAULT_MAX_INITIAL_LINE_LENGTH + " bytes")
        : cause instanceof TooLongHttpHeaderException
            ? ApiException.invalid("headers", "the headers are over " + HttpServerOptions.DEFAULT_MAX_HEADER_SIZE + " bytes")
            : ApiException.invalid("request", "not a valid HTTP request");
    request.response().setStatusCode(error.code().status())
        .putHeader(HttpHeaders.CONTENT_TYPE, "application/json").putHeader(HttpHeaders.CONNECTION, "close")
        .end(error.toJson().toBuffer())
        .onComplete(done -> request.connection().close());
  }

  private static void pause(RoutingContext ctx) {
    ctx.request().pause();
    ctx.next();
  }

  /** A draining node takes no new sockets: they open on another node. */
  private void refusedWhileDraining(RoutingContext ctx) {
    if (services.drain().draining()) {
      Responses.error(ctx, Drain.refusal());
    } else {
      ctx.next();
    }
  }
}
