package io.herald.testing;

import io.herald.HeraldNode;
import io.herald.auth.Authenticator;
import io.herald.config.HeraldConfig;
import io.herald.metrics.HeraldMetrics;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A gateway node on its own Vert.x instance, as a separate process would be. */
public final class TestNode implements AutoCloseable {
  private final Vertx vertx;
  private final HeraldNode node;
  private final Http http;
  private final List<Throwable> uncaught;

  private TestNode(Vertx vertx, HeraldNode node, List<Throwable> uncaught) {
    this.vertx = vertx;
    this.node = node;
    this.http = new Http("http://127.0.0.1:" + node.httpPort());
    this.uncaught = uncaught;
  }

  private Future<Void> stopping;

  public static TestNode start(TestRedis redis) {
    return start(redis, new JsonObject());
  }

  /** {@code config}: herald.json content (API keys included); the port is always a free one. */
  public static TestNode start(TestRedis redis, JsonObject config) {
    return start(redis, config, null);
  }

  /** A node whose configuration names its Redis ({@code redis.url}, or {@code redis.endpoints}). */
  public static TestNode start(JsonObject config) {
    return start(null, config, null);
  }

  /** A node that lets in only whom {@code authenticator} accepts (null: as the configuration says). */
  public static TestNode start(TestRedis redis, JsonObject config, Authenticator authenticator) {
    JsonObject tree = config.copy();
    JsonObject http = tree.getJsonObject("http", new JsonObject()).copy().put("port", 0);
    tree.put("http", http.put("instances", http.getInteger("instances", 2)));
    // the test's Redis, unless the test points the node elsewhere (e.g. through a proxy, or sentinels)
    JsonObject redisTree = tree.getJsonObject("redis", new JsonObject()).copy();
    if (!redisTree.containsKey("timeoutMs")) {
      redisTree.put("timeoutMs", 1000);
    }
    if (!redisTree.containsKey("endpoints") && !redisTree.containsKey("url")) {
      redisTree.put("url", redis.url());
    }
    tree.put("redis", redisTree);
    // a quick scheduler, unless the test sets its own
    JsonObject scheduler = tree.getJsonObject("scheduler", new JsonObject()).copy();
    tree.put("scheduler", scheduler.put("tickMs", scheduler.getInteger("tickMs", 10)));
    HeraldMetrics metrics = new HeraldMetrics();
    Vertx vertx = metrics.vertx(new VertxOptions());
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    vertx.exceptionHandler(uncaught::add);
    try {
      HeraldConfig parsed = HeraldConfig.from(tree);
      HeraldNode node = (authenticator == null ? HeraldNode.start(vertx, parsed, parsed.redis().target(), metrics)
          : HeraldNode.start(vertx, parsed, parsed.redis().target(), authenticator, metrics)).await();
      return new TestNode(vertx, node, uncaught);
    } catch (RuntimeException e) {
      vertx.close().await();
      throw e;
    }
  }

  /** Exceptions no handler of the node caught (Vert.x would have logged them as unhandled). */
  public List<Throwable> uncaught() {
    return uncaught;
  }

  public Http http() {
    return http;
  }

  public int port() {
    return node.httpPort();
  }

  /** What the node's HTTP API routes, as "METHOD path". */
  public List<String> routes() {
    return node.routes();
  }

  /** The management listener's port (management.port), or -1. */
  public int managementPort() {
    return node.managementPort();
  }

  /** A socket of {@code consumer} on this node. */
  public TestSocket consumerSocket(String consumer) {
    return TestSocket.connect(port(), "/v1/consumers/" + consumer + "/ws");
  }

  /** Stops the node as SIGTERM does (see {@code HeraldNode.stop}); the answer completes once it stopped. */
  public synchronized Future<Void> stop() {
    if (stopping == null) {
      stopping = node.stop().eventually(vertx::close);
    }
    return stopping;
  }

  @Override
  public void close() {
    stop().await();
  }
}
