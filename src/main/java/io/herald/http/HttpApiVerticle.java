package io.herald.http;

import io.herald.Addresses;
import io.herald.ack.Acks;
import io.herald.ack.Settlements;
import io.herald.admin.ConsumerRoutes;
import io.herald.admin.StatsRoutes;
import io.herald.admin.TopicRoutes;
import io.herald.auth.Authentication;
import io.herald.auth.Authenticator;
import io.herald.config.HeraldConfig;
import io.herald.consumer.ConsumerDirectory;
import io.herald.consumer.ConsumerSettings;
import io.herald.deadletter.FailedEventRoutes;
import io.herald.delivery.Batch;
import io.herald.delivery.PollService;
import io.herald.history.EventHistory;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.protocol.Requests;
import io.herald.publish.PublishService;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.RedisStore;
import io.herald.throttle.RateLimiter;
import io.herald.topic.TopicDirectory;
import io.herald.ws.OriginCheck;
import io.herald.ws.WebSocketGateway;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.VerticleBase;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.Http2Settings;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.handler.BodyHandler;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * The HTTP API: publish, poll, ack, consumer metadata, administration and health. Several instances
 * share the port; each owns its Redis connection, its publish rounds and its parked long polls.
 */
public final class HttpApiVerticle extends VerticleBase {
  /** The publish route; its topic is read from the path as sent (see {@link Requests#rawPathGroup}). */
  private static final Pattern PUBLISH_PATH = Pattern.compile("/v1/topics/(?<topic>.+)/events");
  static final long MAX_WAIT_MS = 20_000;

  private final Supplier<RedisStore> stores;
  private final ConsumerDirectory directory;
  private final TopicDirectory topics;
  private final SpoolLedger ledger;
  private final String host;
  private final int port;
  private final HeraldConfig.Http http;
  private final long redisTimeoutMs;
  private final long idempotencyWindowMs;
  private final String waiterPrefix;
  private final Authentication authentication;
  private RedisStore store;
  private PublishService publisher;
  private PollService poller;
  private Acks acks;
  private Settlements settlements;
  private WebSocketGateway sockets;
  private HttpServer server;

  /** @param config the node's configuration; {@code host} and {@code port} are those it listens on */
  public HttpApiVerticle(Supplier<RedisStore> stores, ConsumerDirectory directory, TopicDirectory topics,
      SpoolLedger ledger, String host, int port, HeraldConfig config, String waiterPrefix,
      Authenticator authenticator) {
    this.stores = stores;
    this.directory = directory;
    this.topics = topics;
    this.ledger = ledger;
    this.host = host;
    this.port = port;
    this.http = config.http();
    this.redisTimeoutMs = config.redis().timeoutMs();
    this.idempotencyWindowMs = config.publishing().idempotencyWindowMs();
    this.waiterPrefix = waiterPrefix;
    this.authentication = new Authentication(authenticator);
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    DueTimes dueTimes = new DueTimes(vertx, store);
    HoldSettler settler = new HoldSettler(vertx, store, ledger);
    publisher = new PublishService(context, store, directory, topics, ledger, settler, http.maxEventBytes(), dueTimes,
        idempotencyWindowMs);
    poller = new PollService(vertx, store, dueTimes, ledger, settler, waiterPrefix);
    settlements = new Settlements(store, dueTimes);
    vertx.eventBus().<String>localConsumer(Addresses.wake(waiterPrefix), message -> poller.wake(message.body()));
    vertx.eventBus().localConsumer(Addresses.WAKE_ALL, message -> poller.wakeAll());
    acks = new Acks(vertx, redisTimeoutMs);
    sockets = new WebSocketGateway(vertx, poller, new RateLimiter(store), acks, settlements, publisher,
        http.pingIntervalMs(), http.pongTimeoutMs());
    vertx.eventBus().<String>localConsumer(Addresses.BLOCKED, message -> {
      String[] block = message.body().split(" ");
      sockets.blocked(block[0], Long.parseLong(block[1]));
    });

    Router router = Router.router(vertx);
    router.get("/health/live").handler(ctx -> Responses.json(ctx, 200, new JsonObject().put("status", "UP")));
    router.get("/health/ready").handler(this::ready);
    // before the body handler: an upgrade request's connection becomes the socket. Credentials, the
    // consumer and its rate limit are checked first, so a refused upgrade is an HTTP answer in the
    // handshake; the request stays paused meanwhile, as an upgrade needs it unread.
    OriginCheck origins = new OriginCheck(http.allowedOrigins());
    router.get("/v1/consumers/:consumer/ws").handler(HttpApiVerticle::pause).handler(origins).handler(authentication)
        .handler(Authentication::requireConsume).handler(this::consumerSocket);
    router.get("/v1/ws/publish").handler(HttpApiVerticle::pause).handler(origins).handler(authentication)
        .handler(sockets::acceptPublisher);
    router.route().handler(BodyHandler.create(false).setBodyLimit(http.maxBodyBytes()));
    // after the body handler, which must see the request's first bytes
    router.route().handler(authentication);
    router.route("/v1/admin/*").handler(Authentication::requireAdmin);
    router.routeWithRegex("/v1/consumers/(?<consumer>[^/]+)/.+").handler(Authentication::requireConsume);
    router.postWithRegex(PUBLISH_PATH.pattern()).handler(this::publish);
    router.post("/v1/consumers/:consumer/poll").handler(this::poll);
    router.get("/v1/consumers/:consumer/poll").handler(this::poll);
    router.post("/v1/consumers/:consumer/acks").handler(this::ack);
    router.post("/v1/consumers/:consumer/nacks").handler(ctx -> settle(ctx, Settlements.NACK_FIELDS, settlements::nack));
    router.post("/v1/consumers/:consumer/extend").handler(ctx -> settle(ctx, Settlements.EXTEND_FIELDS, settlements::extend));
    new ConsumerRoutes(store, directory).mount(router);
    new TopicRoutes(topics).mount(router);
    new StatsRoutes(store, ledger.quotas()).mount(router);
    new FailedEventRoutes(vertx, store, directory, ledger, settler).mount(router);
    new EventHistory(store, directory).mount(router);
    router.route().failureHandler(Responses::failure);
    router.errorHandler(404, ctx -> Responses.error(ctx, new ApiException(ErrorCode.NOT_FOUND,
        "No route " + ctx.request().method() + " " + ctx.request().path())));
    router.errorHandler(405, ctx -> Responses.error(ctx, new ApiException(ErrorCode.METHOD_NOT_ALLOWED,
        "Method " + ctx.request().method() + " is not allowed on " + ctx.request().path())));

    server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port)
        .setCompressionSupported(false)
        .setMaxWebSocketFrameSize((int) http.maxFrameBytes()).setMaxWebSocketMessageSize((int) http.maxFrameBytes())
        // after a close frame, wait 2 s for the peer's (not 10): a dead peer must not hold the socket
        .setWebSocketClosingTimeout(2)
        .setIdleTimeout((int) http.idleTimeoutMs()).setIdleTimeoutUnit(TimeUnit.MILLISECONDS)
        // HTTP/2 (h2c) requests get the same header limit as HTTP/1.1 ones (refused by the HTTP/2 layer)
        .setInitialSettings(new Http2Settings().setMaxHeaderListSize(HttpServerOptions.DEFAULT_MAX_HEADER_SIZE)));
    return server.invalidRequestHandler(HttpApiVerticle::invalidRequest).requestHandler(router).listen();
  }

  @Override
  public Future<?> stop() {
    // sockets first, with 1001, so clients know to reconnect elsewhere; unacked deliveries come
    // back at their deadlines, acks already answered are stored
    return sockets.closeAll().eventually(server::close).eventually(store::close);
  }

  private void consumerSocket(RoutingContext ctx) {
    directory.requireEnabled(ctx.pathParam("consumer")).onComplete(found -> {
      if (found.failed()) {
        Responses.error(ctx, ApiException.from(found.cause(), false));
      } else {
        sockets.acceptConsumer(ctx, found.result());
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

  private void ready(RoutingContext ctx) {
    store.send(Request.cmd(Command.PING)).onComplete(done -> {
      if (done.succeeded()) {
        Responses.json(ctx, 200, new JsonObject().put("status", "UP"));
      } else {
        Responses.error(ctx, new ApiException(ErrorCode.STORE_UNAVAILABLE, "Redis does not answer"));
      }
    });
  }

  private void publish(RoutingContext ctx) {
    Buffer body = ctx.body().buffer();
    Responses.reply(ctx, () -> {
      String topic = Requests.rawPathGroup(ctx, PUBLISH_PATH, "topic");
      Authentication.caller(ctx).checkPublish(topic);
      return publisher.publish(topic, body == null ? Buffer.buffer() : body);
    });
  }

  private void poll(RoutingContext ctx) {
    Responses.replyBuffer(ctx, () -> {
      JsonObject body = ctx.request().method().name().equals("GET") ? queryParameters(ctx) : Requests.object(ctx);
      Long maxEvents = Requests.integer(body, "maxEvents", 1, 1000);
      Long waitMs = Requests.integer(body, "waitMs", 0, MAX_WAIT_MS);
      Requests.onlyFields(body, "maxEvents", "waitMs");
      Promise<Void> gone = Promise.promise();
      ctx.response().closeHandler(v -> gone.tryComplete());
      return directory.requireEnabled(ctx.pathParam("consumer")).compose(consumer -> poller.poll(consumer,
              maxEvents == null ? consumer.maxPollRecords() : maxEvents.intValue(),
              waitMs == null ? 0 : waitMs, gone.future(), true, "http"))
          .map(Batch::json);
    });
  }

  private void ack(RoutingContext ctx) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      JsonArray ackIds = Requests.strings(body, "ackIds", Acks.MAX_ACK_IDS);
      JsonArray batchAckIds = Requests.strings(body, "batchAckIds", Acks.MAX_BATCH_ACK_IDS);
      Requests.onlyFields(body, "ackIds", "batchAckIds");
      return consumer(ctx).compose(consumer -> acks.ack(consumer, ackIds, batchAckIds));
    });
  }

  /** A nack or extend: the body checked, the consumer known, then {@code action}. */
  private void settle(RoutingContext ctx, String[] fields,
      BiFunction<String, JsonObject, Future<JsonObject>> action) {
    Responses.reply(ctx, () -> {
      JsonObject body = Requests.object(ctx);
      Requests.onlyFields(body, fields);
      return consumer(ctx).compose(consumer -> action.apply(consumer.name(), body));
    });
  }

  /** The consumer named in the path. Acks, nacks and extends of a disabled consumer still settle what it was given. */
  private Future<ConsumerSettings> consumer(RoutingContext ctx) {
    String name = ctx.pathParam("consumer");
    return directory.require(name);
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
