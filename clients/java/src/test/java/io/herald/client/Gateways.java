package io.herald.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import redis.embedded.RedisServer;

/**
 * Real gateway nodes for the tests: the server's jar ({@code herald.jar}, built at the repository's
 * root) in processes of their own, sharing one Redis the tests start, so that a node can be killed
 * while its Redis, and the other node, live on.
 */
final class Gateways implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("Herald listens on (http://[0-9.]+:[0-9]+)");
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private final Path jar;
  private final Path dir;
  private final int redisPort;
  private RedisServer redis;
  private final List<Node> nodes = new ArrayList<>();

  /** One gateway process. */
  static final class Node {
    private final Process process;
    private final String url;
    private final StringBuffer output;

    Node(Process process, String url, StringBuffer output) {
      this.process = process;
      this.url = url;
      this.output = output;
    }

    String url() {
      return url;
    }

    /** SIGKILL: the process ends at once, its connections reset. */
    void kill() throws InterruptedException {
      process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }

    void stop() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    }

    @Override
    public String toString() {
      return url + " " + output;
    }
  }

  Gateways(int nodeCount) throws Exception {
    jar = Path.of(System.getProperty("herald.jar", "../../target/herald.jar"));
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " is missing: run `mvn -q package -DskipTests` at the repository's root first");
    }
    dir = Files.createTempDirectory("herald-client-test");
    redisPort = freePort();
    startRedis();
    for (int i = 0; i < nodeCount; i++) {
      nodes.add(startNode(jar, i));
    }
  }

  /** Starts (or starts again) the Redis, keeping what it stored (AOF). */
  void startRedis() throws IOException {
    redis = RedisServer.newRedisServer().port(redisPort).bind("127.0.0.1").setting("appendonly yes")
        .setting("appendfsync everysec").setting("save \"\"").setting("dir " + dir).build();
    redis.start();
  }

  /** Stops the Redis: the nodes answer 503 until it is back. */
  void stopRedis() throws IOException {
    redis.stop();
  }

  private Node startNode(Path jar, int index) throws Exception {
    Path config = dir.resolve("node-" + index + ".json");
    Files.writeString(config, "{\"http\":{\"port\":0,\"drainMs\":0},\"redis\":{\"url\":\"redis://127.0.0.1:" + redisPort
        + "\"}}");
    ProcessBuilder builder = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-jar",
        jar.toString(), "--config", config.toString()).redirectErrorStream(true);
    builder.environment().keySet().removeIf(name -> name.startsWith("HERALD_") || name.endsWith("JAVA_OPTIONS")
        || name.equals("JAVA_TOOL_OPTIONS"));
    Process process = builder.start();
    StringBuffer output = new StringBuffer();
    CompletableFuture<String> listening = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = lines.readLine()) != null; ) {
          output.append(line).append('\n');
          Matcher url = LISTENING.matcher(line);
          if (url.find()) {
            listening.complete(url.group(1));
          }
        }
      } catch (IOException e) {
        // the process ended
      }
      listening.completeExceptionally(new IllegalStateException("the node ended: " + output));
    }, "node-" + index + "-output");
    reader.setDaemon(true);
    reader.start();
    return new Node(process, listening.get(60, TimeUnit.SECONDS), output);
  }

  /** Another node on the same Redis. */
  Node addNode() throws Exception {
    Node node = startNode(jar, nodes.size());
    nodes.add(node);
    return node;
  }

  String url(int index) {
    return nodes.get(index).url();
  }

  /** A new consumer of {@code topic} with these settings (JSON object members, without braces). */
  String consumer(String topic, String settings) {
    String name = "c-" + UUID.randomUUID().toString().substring(0, 8);
    HttpResponse<String> created = send("PUT", "/v1/admin/consumers/" + name,
        "{\"topics\":[\"" + topic + "\"]" + (settings.isEmpty() ? "" : "," + settings) + "}");
    assertEquals(201, created.statusCode(), created.body());
    return name;
  }

  static String topic(String prefix) {
    return prefix + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  JsonNode metadata(String consumer) {
    return Json.decode(send("GET", "/v1/consumers/" + consumer + "/metadata", null).body());
  }

  JsonNode history(String consumer, String eventId) {
    return Json.decode(send("GET", "/v1/consumers/" + consumer + "/events/" + eventId, null).body());
  }

  HttpResponse<String> send(String method, String path, String body) {
    for (Node node : List.copyOf(nodes)) {
      if (!node.process.isAlive()) {
        continue;
      }
      try {
        return HTTP.send(HttpRequest.newBuilder(URI.create(node.url() + path)).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .build(), HttpResponse.BodyHandlers.ofString());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
    throw new IllegalStateException("no node is running");
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  @Override
  public void close() throws IOException {
    try {
      for (Node node : nodes) {
        node.stop();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      redis.stop();
    }
  }
}
