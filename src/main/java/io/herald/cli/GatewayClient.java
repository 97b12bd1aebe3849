package io.herald.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** The command line's HTTP client of one gateway: {@code --url} and {@code --token}. */
final class GatewayClient {
  /** An answer: its status, JSON body (empty when it had none) and {@code Retry-After} (seconds; 0 without one). */
  record Answer(int status, JsonObject body, long retryAfterSeconds) {
    boolean ok() {
      return status >= 200 && status < 300;
    }

    /** The error envelope's code, or the status. */
    String errorCode() {
      JsonObject error = body.getJsonObject("error");
      return error == null ? String.valueOf(status) : error.getString("code");
    }

    String errorMessage() {
      JsonObject error = body.getJsonObject("error");
      return error == null ? "HTTP " + status : error.getString("message");
    }
  }

  /** The gateway could not be reached, or did not answer in time. */
  static final class Unreachable extends Exception {
    Unreachable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static final long MAX_BACKOFF_MS = 30_000;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private final String url;
  private final String token;

  GatewayClient(String url, String token) {
    this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    this.token = token;
  }

  Answer get(String path) throws Unreachable, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url + path)).GET());
  }

  Answer post(String path, JsonObject body) throws Unreachable, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url + path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body.encode())));
  }

  /**
   * A POST tried again, with backoff, after a 503 or a lost connection: {@code tries} times in all,
   * or until it is answered when {@code tries} is 0. Each retry is told on {@code err}; null once the
   * tries are used up (told too).
   */
  Answer postRetrying(String what, String path, JsonObject body, int tries, PrintWriter err) throws InterruptedException {
    for (int failures = 1; ; failures++) {
      String problem;
      try {
        Answer answer = post(path, body);
        if (answer.status() != 503) {
          return answer;
        }
        problem = answer.errorCode() + ": " + answer.errorMessage();
      } catch (Unreachable e) {
        problem = e.getMessage();
      }
      if (failures == tries) {
        err.println(what + " failed after " + tries + " tries: " + problem);
        return null;
      }
      long backoffMs = Math.min(MAX_BACKOFF_MS, 500L << Math.min(failures - 1, 6));
      err.println(what + " failed (" + problem + "); trying again in " + backoffMs + " ms");
      err.flush();
      Thread.sleep(backoffMs);
    }
  }

  Answer put(String path, JsonObject body) throws Unreachable, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url + path)).header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString(body.encode())));
  }

  Answer delete(String path) throws Unreachable, InterruptedException {
    return send(HttpRequest.newBuilder(URI.create(url + path)).DELETE());
  }

  /** Opens a WebSocket on {@code path} (credentials as a header); completes once it is open. */
  CompletableFuture<WebSocket> webSocket(String path, WebSocket.Listener listener) {
    WebSocket.Builder builder = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(5));
    if (token != null) {
      builder.header("Authorization", "Bearer " + token);
    }
    return builder.buildAsync(URI.create(url.replaceFirst("^http", "ws") + path), listener);
  }

  private Answer send(HttpRequest.Builder request) throws Unreachable, InterruptedException {
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    try {
      // a long poll waits up to 20 s before it answers
      HttpResponse<String> response = http.send(request.timeout(Duration.ofSeconds(40)).build(),
          HttpResponse.BodyHandlers.ofString());
      JsonObject body;
      try {
        body = response.body().isBlank() ? new JsonObject() : new JsonObject(response.body());
      } catch (DecodeException notJson) {
        body = new JsonObject();
      }
      long retryAfter = response.headers().firstValue("Retry-After").map(GatewayClient::seconds).orElse(0L);
      return new Answer(response.statusCode(), body, retryAfter);
    } catch (IOException e) {
      throw new Unreachable(url + ": " + (e.getMessage() == null ? e.toString() : e.getMessage()), e);
    }
  }

  private static long seconds(String retryAfter) {
    try {
      return Math.max(0, Long.parseLong(retryAfter.trim()));
    } catch (NumberFormatException httpDate) {
      return 1;
    }
  }
}
