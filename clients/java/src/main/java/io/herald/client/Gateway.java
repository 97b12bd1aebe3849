package io.herald.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gateway nodes a client talks to: HTTP calls and WebSocket upgrades on the current node, and a
 * move to the next node when the current one fails (the nodes are stateless: any of them serves any
 * request).
 */
final class Gateway {
  /** An answer: status, JSON body (missing when there was none) and {@code Retry-After} in milliseconds (0: none). */
  record Answer(int status, JsonNode body, long retryAfterMs) {
    boolean ok() {
      return status >= 200 && status < 300;
    }

    /** The refusal this answer is, from its error envelope. */
    HeraldException refusal() {
      JsonNode error = body.path("error");
      return new HeraldException(status, error.path("code").asText(String.valueOf(status)),
          error.path("message").asText("HTTP " + status), error.get("details"));
    }
  }

  private final List<URI> endpoints;
  private final AtomicInteger current = new AtomicInteger();
  private final String token;
  private final Duration requestTimeout;
  private final HttpClient http;

  Gateway(List<URI> endpoints, String token, Duration connectTimeout, Duration requestTimeout) {
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("at least one endpoint is needed");
    }
    this.endpoints = List.copyOf(endpoints);
    this.token = token;
    this.requestTimeout = requestTimeout;
    // HTTP/1.1: a pool of plain connections, no h2c upgrade round trip on each new one
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout).build();
  }

  /** The node calls go to now. */
  URI endpoint() {
    return endpoints.get(Math.floorMod(current.get(), endpoints.size()));
  }

  /** Moves on from {@code failed} to the next node, unless another caller already did. */
  void failed(URI failed) {
    int index = current.get();
    if (endpoints.get(Math.floorMod(index, endpoints.size())).equals(failed)) {
      current.compareAndSet(index, index + 1);
    }
  }

  CompletableFuture<Answer> get(String path) {
    return send(path, HttpRequest.newBuilder().GET(), requestTimeout);
  }

  CompletableFuture<Answer> post(String path, String json) {
    return post(path, json, requestTimeout);
  }

  /** A POST with its own timeout (a long poll waits longer than other calls). */
  CompletableFuture<Answer> post(String path, String json, Duration timeout) {
    return send(path, HttpRequest.newBuilder().header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)), timeout);
  }

  /**
   * Sends a request to the current node. Completes with the answer whatever its status; completes
   * exceptionally with an {@link HeraldException#UNREACHABLE} one when no answer came (and moves on
   * to the next node for the next call).
   */
  private CompletableFuture<Answer> send(String path, HttpRequest.Builder request, Duration timeout) {
    URI node = endpoint();
    if (token != null) {
      request.header("Authorization", "Bearer " + token);
    }
    return http.sendAsync(request.uri(node.resolve(path.substring(1))).timeout(timeout).build(), HttpResponse.BodyHandlers.ofString())
        .handle((response, failure) -> {
          if (failure != null) {
            failed(node);
            Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
            throw new HeraldException(node + path + ": " + cause, cause);
          }
          if (response.statusCode() == 503) {
            // Redis away for this node, or the node is draining: the next call tries another one
            failed(node);
          }
          JsonNode body;
          try {
            body = response.body().isBlank() ? MissingNode.getInstance() : Json.decode(response.body());
          } catch (RuntimeException notJson) {
            body = MissingNode.getInstance();
          }
          return new Answer(response.statusCode(), body, retryAfterMs(response.headers().firstValue("Retry-After").orElse(null)));
        });
  }

  /** Opens a WebSocket on the current node; credentials go as a header. */
  CompletableFuture<WebSocket> webSocket(String path, WebSocket.Listener listener) {
    URI node = endpoint();
    WebSocket.Builder builder = http.newWebSocketBuilder().connectTimeout(requestTimeout);
    if (token != null) {
      builder.header("Authorization", "Bearer " + token);
    }
    URI uri = URI.create(node.resolve(path.substring(1)).toString().replaceFirst("^http", "ws"));
    return builder.buildAsync(uri, listener).whenComplete((socket, failure) -> {
      // a refused upgrade (401, 429, ...) is an answer: the node is fine
      if (failure != null && refusedUpgrade(failure) == null) {
        failed(node);
      }
    });
  }

  static long retryAfterMs(String header) {
    if (header == null) {
      return 0;
    }
    try {
      return Math.max(0, Long.parseLong(header.trim())) * 1000;
    } catch (NumberFormatException httpDate) {
      return 1000;
    }
  }

  /** The HTTP answer that refused a WebSocket upgrade, or null when the failure was another. */
  static HttpResponse<?> refusedUpgrade(Throwable failure) {
    for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
      if (cause instanceof WebSocketHandshakeException handshake) {
        return handshake.getResponse();
      }
    }
    return null;
  }
}
