package io.herald.bench;

import io.herald.store.RedisProcess;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A gateway under benchmark: a real Redis (AOF, fsync every second) and the fat jar in a process of
 * its own (-Xmx1g), as deployed. {@code HERALD_JVM_OPTS} adds JVM options, e.g.
 * {@code -XX:StartFlightRecording=filename=herald.jfr} to profile it; {@code HERALD_BENCH_CONFIG}
 * is its herald.json (default {@code {}}), e.g. to measure with quotas. Everything it wrote is
 * deleted on close.
 */
final class BenchGateway implements AutoCloseable {
  private static final Pattern HEAP_USED = Pattern.compile("used (\\d+)K");

  private final Path dir;
  /** Its own Redis, or null on Redis servers the caller started (and closes). */
  private final RedisProcess redis;
  private final String redisUrl;
  private final List<ProcessHandle> redisProcesses;
  private final Process herald;
  private final int port;

  private BenchGateway(Path dir, RedisProcess redis, String redisUrl, List<ProcessHandle> redisProcesses, Process herald,
      int port) {
    this.dir = dir;
    this.redis = redis;
    this.redisUrl = redisUrl;
    this.redisProcesses = redisProcesses;
    this.herald = herald;
    this.port = port;
  }

  static BenchGateway start() throws IOException {
    return start(System.getenv().getOrDefault("HERALD_BENCH_CONFIG", "{}"));
  }

  /** As {@link #start()}, with {@code config} as its herald.json. */
  static BenchGateway start(String config) throws IOException {
    Path dir = Files.createTempDirectory("herald-bench-");
    RedisProcess redis = RedisProcess.start(redisServer(), dir.resolve("redis"), 0, "everysec");
    return launch(dir, config, redis, redis.url(), List.of(redis.handle()), Map.of("HERALD_REDIS_URL", redis.url()));
  }

  /**
   * A gateway on Redis servers the caller started and closes (a Sentinel set, a cluster): its
   * herald.json {@code config} names them; {@code redisUrl} is one to read figures from, and
   * {@code redisProcesses} are all of them, for their CPU time.
   */
  static BenchGateway startOn(String config, String redisUrl, List<ProcessHandle> redisProcesses) throws IOException {
    return launch(Files.createTempDirectory("herald-bench-"), config, null, redisUrl, redisProcesses, Map.of());
  }

  private static BenchGateway launch(Path dir, String config, RedisProcess redis, String redisUrl,
      List<ProcessHandle> redisProcesses, Map<String, String> environment) throws IOException {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    Files.writeString(dir.resolve("herald.json"), config);
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xms1g", "-Xmx1g"));
    command.addAll(List.of(System.getenv().getOrDefault("HERALD_JVM_OPTS", "").split(" ")).stream()
        .filter(option -> !option.isBlank()).toList());
    command.addAll(List.of("-jar", "target/herald.jar", "--config", dir.resolve("herald.json").toString()));
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectErrorStream(true).redirectOutput(dir.resolve("herald.log").toFile());
    builder.environment().putAll(environment);
    builder.environment().put("HERALD_HTTP_PORT", String.valueOf(port));
    return new BenchGateway(dir, redis, redisUrl, redisProcesses, builder.start(), port);
  }

  static File redisServer() {
    return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        .map(d -> new File(d, "redis-server")).filter(File::canExecute).findFirst()
        .orElseGet(RedisProcess::embeddedExecutable);
  }

  int port() {
    return port;
  }

  String redisUrl() {
    return redisUrl;
  }

  ProcessHandle gatewayProcess() {
    return herald.toHandle();
  }

  /** CPU seconds every Redis server of the gateway has used so far. */
  double redisCpuSeconds() {
    return redisProcesses.stream().mapToDouble(BenchGateway::cpuSeconds).sum();
  }

  /** Waits until the gateway answers {@code /health/ready}. */
  void awaitReady(Vertx vertx, HttpClient http) {
    Promise<Void> ready = Promise.promise();
    checkReady(vertx, http, ready, System.nanoTime() + 60_000_000_000L);
    ready.future().await();
  }

  private static void checkReady(Vertx vertx, HttpClient http, Promise<Void> ready, long giveUpAt) {
    http.request(HttpMethod.GET, "/health/ready").compose(request -> request.send()).onComplete(done -> {
      if (done.succeeded() && done.result().statusCode() == 200) {
        ready.complete();
      } else if (System.nanoTime() > giveUpAt) {
        ready.fail("the gateway did not become ready");
      } else {
        vertx.setTimer(100, t -> checkReady(vertx, http, ready, giveUpAt));
      }
    });
  }

  /** The gateway's heap in use after a full GC, read with jcmd. */
  long heapUsedKb() throws IOException, InterruptedException {
    String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
    new ProcessBuilder(jcmd, String.valueOf(herald.pid()), "GC.run").redirectErrorStream(true).start().waitFor();
    Process info = new ProcessBuilder(jcmd, String.valueOf(herald.pid()), "GC.heap_info").redirectErrorStream(true).start();
    String text = new String(info.getInputStream().readAllBytes());
    info.waitFor();
    Matcher used = HEAP_USED.matcher(text);
    if (!used.find()) {
      throw new IllegalStateException("no heap figure in: " + text);
    }
    return Long.parseLong(used.group(1));
  }

  static double cpuSeconds(ProcessHandle process) {
    return process.info().totalCpuDuration().map(d -> d.toMillis() / 1000.0).orElse(Double.NaN);
  }

  @Override
  public void close() throws IOException {
    herald.destroy();
    try {
      herald.waitFor();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (redis != null) {
      redis.close();
    }
    // the AOF of a run is hundreds of MB
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
    }
  }
}
