package io.herald.metrics;

import io.herald.http.Responses;
import io.herald.lifecycle.Drain;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.store.RedisStore;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.ext.web.Router;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * The management listener ({@code management.port}): {@code /health/*} and {@code /metrics} on an
 * event loop and a Redis connection of their own, so probes and scrapes never queue behind the
 * API's traffic. No credentials: bind it to a network only the orchestrator and Prometheus reach.
 */
public final class ManagementVerticle extends VerticleBase {
  private final Supplier<RedisStore> stores;
  private final Drain drain;
  private final HeraldMetrics metrics;
  private final String host;
  private final int port;
  private RedisStore store;
  private HttpServer server;

  public ManagementVerticle(Supplier<RedisStore> stores, Drain drain, HeraldMetrics metrics, String host, int port) {
    this.stores = stores;
    this.drain = drain;
    this.metrics = metrics;
    this.host = host;
    this.port = port;
  }

  @Override
  public Future<?> start() {
    store = stores.get();
    Router router = Router.router(vertx);
    OperationsRoutes operations = new OperationsRoutes(store, drain, metrics);
    operations.mountHealth(router);
    operations.mountMetrics(router, ctx -> ctx.next());
    router.route().failureHandler(Responses::failure);
    router.errorHandler(404, ctx -> Responses.error(ctx, new ApiException(ErrorCode.NOT_FOUND,
        "The management listener serves /health/live, /health/ready and /metrics only")));
    // probes and scrapes speak HTTP/1.1; no h2c upgrade (see http.h2c)
    server = vertx.createHttpServer(new HttpServerOptions().setHost(host).setPort(port).setHttp2ClearTextEnabled(false));
    return server.requestHandler(router).listen()
        .recover(failure -> Future.failedFuture(new IllegalStateException("cannot listen on " + host + ":" + port
            + " (management.host, management.port): " + Objects.toString(failure.getMessage(), failure.toString()), failure)));
  }

  @Override
  public Future<?> stop() {
    return server.close().eventually(store::close);
  }
}
