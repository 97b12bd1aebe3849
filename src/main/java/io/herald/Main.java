package io.herald;

import io.herald.auth.ApiKey;
import io.herald.cli.HeraldCli;
import io.herald.config.ConfigLoader;
import io.herald.config.HeraldConfig;
import io.herald.metrics.HeraldMetrics;
import io.herald.store.RedisProcess;
import io.herald.store.RedisTarget;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Starts one gateway node: {@code java -jar herald.jar [--config FILE]}. Without a configured Redis
 * it starts the embedded one, keeping its data under the data directory. {@code make-key} prints a
 * new API key; {@code publish}, {@code consume}, {@code tail}, {@code stats}, {@code bench} and {@code --help} are the command line ({@link HeraldCli}).
 */
public final class Main {
  private static final System.Logger LOG = System.getLogger(Main.class.getName());
  /** Beyond the drain: closing sockets (2 s each at most, together), Redis connections and Vert.x. */
  private static final long CLOSE_MS = 10_000;
  private static final List<String> LOG_LEVELS = List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");

  private Main() {}

  /** Prints a new API key's secret (shown once, for its holder) and its hash (for auth.keys). */
  private static void makeKey() {
    String secret = ApiKey.newSecret();
    System.out.println("secret (give it to the key's holder; it is not stored anywhere): " + secret);
    System.out.println("sha256 (put it in auth.keys.<name>.sha256): " + HexFormat.of().formatHex(ApiKey.hash(secret)));
  }

  public static void main(String[] args) {
    if (HeraldCli.handles(args)) {
      System.exit(HeraldCli.run(args, new PrintWriter(System.out, true, StandardCharsets.UTF_8),
          new PrintWriter(System.err, true, StandardCharsets.UTF_8), System.in));
    }
    String logging = loggingProblem();
    if (logging != null) {
      System.err.println("Herald cannot start: " + logging);
      System.exit(1);
    }
    Path configFile = ConfigLoader.DEFAULT_FILE;
    if (args.length == 1 && args[0].equals("make-key")) {
      makeKey();
      return;
    }
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--config") && i + 1 < args.length) {
        configFile = Path.of(args[++i]);
      } else {
        System.err.println("usage: java -jar herald.jar [--config FILE] | make-key | publish|consume|tail|stats|bench ... | --help");
        System.exit(2);
      }
    }
    HeraldMetrics metrics = new HeraldMetrics();
    Vertx vertx = metrics.vertx(new VertxOptions());
    HeraldConfig config;
    try {
      config = ConfigLoader.load(vertx, configFile).await();
    } catch (Exception e) {
      System.err.println("Herald cannot start: configuration " + configFile + ": " + oneLine(e));
      vertx.close();
      System.exit(1);
      return;
    }
    RedisProcess embedded = null;
    RedisTarget redis = config.redis().target();
    if (redis == null) {
      HeraldConfig.Embedded settings = config.redis().embedded();
      try {
        embedded = RedisProcess.start(RedisProcess.embeddedExecutable(), settings.dataDir(), settings.port(),
            settings.appendfsync());
      } catch (RuntimeException e) {
        System.err.println("Herald cannot start: the embedded Redis (redis.embedded.port " + settings.port()
            + ", redis.embedded.dataDir / HERALD_DATA_DIR " + settings.dataDir().toAbsolutePath() + ") did not start: "
            + oneLine(e));
        vertx.close();
        System.exit(1);
        return;
      }
      redis = RedisTarget.standalone(embedded.url());
      LOG.log(System.Logger.Level.INFO, "Started the embedded Redis on port " + embedded.port() + ", data in "
          + settings.dataDir().toAbsolutePath() + " (appendfsync " + settings.appendfsync() + ")");
    }
    RedisProcess redisToStop = embedded;
    try {
      HeraldNode node = HeraldNode.start(vertx, config, redis, metrics).await();
      if (node.open()) {
        LOG.log(System.Logger.Level.WARNING, "No credentials are configured (auth.keys, auth.jwt): Herald is open, so it"
            + " listens on " + node.host() + " only");
      }
      LOG.log(System.Logger.Level.INFO, "Herald listens on http://" + node.host() + ":" + node.httpPort()
          + (node.managementPort() < 0 ? "" : ", management (health, metrics) on port " + node.managementPort()));
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        stop(node.stop().eventually(vertx::close), node.drainMs() + CLOSE_MS);
        if (redisToStop != null) {
          redisToStop.close();
        }
      }, "herald-shutdown"));
    } catch (Exception e) {
      System.err.println("Herald cannot start: " + oneLine(e));
      stop(vertx.close(), CLOSE_MS);
      if (redisToStop != null) {
        redisToStop.close();
      }
      System.exit(1);
    }
  }

  /**
   * What is wrong with the logging settings logback.xml reads, or null: logback would not say (it
   * would log nothing, or at another level), so the node refuses to start instead.
   */
  private static String loggingProblem() {
    String format = System.getProperty("herald.log.format", System.getenv().getOrDefault("HERALD_LOG_FORMAT", "text"));
    if (!format.equals("text") && !format.equals("json")) {
      return "HERALD_LOG_FORMAT (herald.log.format) must be text or json, not '" + format + "'";
    }
    String level = System.getenv("HERALD_LOG_LEVEL");
    if (level != null && !LOG_LEVELS.contains(level.toUpperCase(Locale.ROOT))) {
      return "HERALD_LOG_LEVEL must be one of " + String.join(", ", LOG_LEVELS) + ", not '" + level + "'";
    }
    return null;
  }

  /** What went wrong, on one line, as every line Herald writes is one record. */
  private static String oneLine(Throwable failure) {
    return Objects.toString(failure.getMessage(), failure.toString()).replaceAll("\\s*\\R\\s*", " ");
  }

  private static void stop(Future<Void> stopping, long waitMs) {
    try {
      stopping.toCompletionStage().toCompletableFuture().get(waitMs, java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "Shutdown did not finish cleanly: " + e.getMessage());
    }
  }
}
