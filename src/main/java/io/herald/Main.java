package io.herald;

import io.herald.auth.ApiKey;
import io.herald.config.ConfigLoader;
import io.herald.config.HeraldConfig;
import io.herald.store.RedisProcess;
import io.herald.store.RedisTarget;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.nio.file.Path;
import java.util.HexFormat;

/**
 * Starts one gateway node: {@code java -jar herald.jar [--config FILE]}. Without a configured Redis
 * it starts the embedded one, keeping its data under the data directory.
 */
public final class Main {
  private static final System.Logger LOG = System.getLogger(Main.class.getName());

  private Main() {}

  /** Prints a new API key's secret (shown once, for its holder) and its hash (for auth.keys). */
  private static void makeKey() {
    String secret = ApiKey.newSecret();
    System.out.println("secret (give it to the key's holder; it is not stored anywhere): " + secret);
    System.out.println("sha256 (put it in auth.keys.<name>.sha256): " + HexFormat.of().formatHex(ApiKey.hash(secret)));
  }

  public static void main(String[] args) {
    Path configFile = ConfigLoader.DEFAULT_FILE;
    if (args.length == 1 && args[0].equals("make-key")) {
      makeKey();
      return;
    }
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--config") && i + 1 < args.length) {
        configFile = Path.of(args[++i]);
      } else {
        System.err.println("usage: java -jar herald.jar [--config FILE] | make-key");
        System.exit(2);
      }
    }
    Vertx vertx = Vertx.vertx();
    HeraldConfig config;
    try {
      config = ConfigLoader.load(vertx, configFile).await();
    } catch (Exception e) {
      System.err.println("Herald cannot start: configuration " + configFile + ": " + oneLine(e.getMessage()));
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
            + oneLine(e.getMessage()));
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
      HeraldNode node = HeraldNode.start(vertx, config, redis).await();
      if (node.open()) {
        LOG.log(System.Logger.Level.WARNING, "No credentials are configured (auth.keys, auth.jwt): Herald is open, so it"
            + " listens on " + node.host() + " only");
      }
      LOG.log(System.Logger.Level.INFO, "Herald listens on http://" + node.host() + ":" + node.httpPort());
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        stop(node.stop().eventually(vertx::close));
        if (redisToStop != null) {
          redisToStop.close();
        }
      }, "herald-shutdown"));
    } catch (Exception e) {
      System.err.println("Herald cannot start: " + oneLine(e.getMessage()));
      stop(vertx.close());
      if (redisToStop != null) {
        redisToStop.close();
      }
      System.exit(1);
    }
  }

  /** A message on one line, as every line Herald writes is one record. */
  private static String oneLine(String message) {
    return String.valueOf(message).replaceAll("\\s*\\R\\s*", " ");
  }

  private static void stop(Future<Void> stopping) {
    try {
      stopping.toCompletionStage().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "Shutdown did not finish cleanly: " + e.getMessage());
    }
  }
}
