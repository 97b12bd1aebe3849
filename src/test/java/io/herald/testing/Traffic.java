package io.herald.testing;

import io.vertx.core.json.JsonObject;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The suite's HTTP exchanges and WebSocket frames, recorded for RecordedTrafficIT: every call made
 * through {@link Http}, and every frame a {@link TestSocket} receives, is a JSON line in the folder the system property {@value #PROPERTY} names (the pom sets it for
 * the integration tests), so that the contract is checked against what the suite really sent and got.
 */
public final class Traffic {
  public static final String PROPERTY = "herald.traffic";
  /** Bodies above this are recorded as null (not checked): the suite sends bodies of up to 16 MiB. */
  private static final int MAX_BODY_CHARS = 64 * 1024;
  private static BufferedWriter writer;

  private Traffic() {}

  /** One exchange: the request's method, path (with its query) and body, the answer's status, type and body. */
  public record Exchange(String method, String path, String request, int status, String contentType, String response) {}

  /** A frame a node sent on a WebSocket: the socket's channel ("consumer" or "publisher") and the frame's text. */
  public record Frame(String channel, String text) {}

  static void record(HttpResponse<String> response, String requestBody) {
    String query = response.request().uri().getRawQuery();
    write(new JsonObject().put("method", response.request().method())
        .put("path", response.request().uri().getRawPath() + (query == null ? "" : "?" + query))
        .put("request", bounded(requestBody)).put("status", response.statusCode())
        .put("contentType", response.headers().firstValue("content-type").orElse(null))
        .put("response", bounded(response.body())));
  }

  private static String bounded(String body) {
    return body == null || body.length() > MAX_BODY_CHARS ? null : body;
  }

  static void recordFrame(String channel, String text) {
    if (text.length() <= MAX_BODY_CHARS) {
      write(new JsonObject().put("channel", channel).put("frame", text));
    }
  }

  private static synchronized void write(JsonObject line) {
    String folder = System.getProperty(PROPERTY);
    if (folder == null) {
      return;
    }
    try {
      if (writer == null) {
        Path dir = Path.of(folder);
        Files.createDirectories(dir);
        writer = Files.newBufferedWriter(dir.resolve(ProcessHandle.current().pid() + ".jsonl"), StandardCharsets.UTF_8);
      }
      writer.write(line.encode());
      writer.newLine();
      writer.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every HTTP exchange recorded in {@code folder}. */
  public static List<Exchange> exchanges(Path folder) throws IOException {
    return lines(folder).stream().filter(json -> json.containsKey("method"))
        .map(json -> new Exchange(json.getString("method"), json.getString("path"), json.getString("request"),
            json.getInteger("status"), json.getString("contentType"), json.getString("response")))
        .toList();
  }

  /** Every WebSocket frame from a node recorded in {@code folder}. */
  public static List<Frame> frames(Path folder) throws IOException {
    return lines(folder).stream().filter(json -> json.containsKey("frame"))
        .map(json -> new Frame(json.getString("channel"), json.getString("frame"))).toList();
  }

  private static List<JsonObject> lines(Path folder) throws IOException {
    List<JsonObject> lines = new ArrayList<>();
    if (!Files.isDirectory(folder)) {
      return lines;
    }
    try (Stream<Path> files = Files.list(folder)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".jsonl")).toList()) {
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
          lines.add(new JsonObject(line));
        }
      }
    }
    return lines;
  }
}
