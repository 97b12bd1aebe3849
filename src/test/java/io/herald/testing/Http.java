package io.herald.testing;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

/** A plain HTTP client, as any outside user of the gateway would have. */
public final class Http {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final String base;
  /** The Authorization header sent, when not null. */
  private final String authorization;

  public Http(String base) {
    this(base, null);
  }

  private Http(String base, String authorization) {
    this.base = base;
    this.authorization = authorization;
  }

  /** The same client, presenting {@code token} as a bearer token. */
  public Http withToken(String token) {
    return withAuthorization("Bearer " + token);
  }

  /** The same client, sending this Authorization header. */
  public Http withAuthorization(String authorization) {
    return new Http(base, authorization);
  }

  public record Reply(int status, String body, HttpResponse<String> raw) {
    public JsonObject json() {
      return new JsonObject(body);
    }

    public JsonArray results() {
      return json().getJsonArray("results");
    }

    public JsonArray events() {
      return json().getJsonArray("events");
    }

    public String errorCode() {
      return json().getJsonObject("error").getString("code");
    }

    public List<String> eventIds() {
      return events().stream().map(e -> ((JsonObject) e).getString("eventId")).collect(Collectors.toList());
    }

    public List<String> ackIds() {
      return events().stream().map(e -> ((JsonObject) e).getString("ackId")).collect(Collectors.toList());
    }
  }

  public Reply get(String path) {
    return send(HttpRequest.newBuilder(URI.create(base + path)).GET(), null);
  }

  public Reply delete(String path) {
    return send(HttpRequest.newBuilder(URI.create(base + path)).DELETE(), null);
  }

  public Reply post(String path, Object body) {
    String text = textOf(body);
    return send(HttpRequest.newBuilder(URI.create(base + path)).POST(HttpRequest.BodyPublishers.ofString(text)), text);
  }

  public Reply put(String path, Object body) {
    String text = textOf(body);
    return send(HttpRequest.newBuilder(URI.create(base + path)).PUT(HttpRequest.BodyPublishers.ofString(text)), text);
  }

  // --- the protocol's operations, for readable tests

  public Reply putConsumer(String name, JsonObject settings) {
    return put("/v1/admin/consumers/" + name, settings);
  }

  public Reply publish(String topic, JsonObject body) {
    return post("/v1/topics/" + topic + "/events", body);
  }

  public Reply poll(String consumer, JsonObject body) {
    return post("/v1/consumers/" + consumer + "/poll", body);
  }

  public Reply ack(String consumer, String... ackIds) {
    return post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("ackIds", new JsonArray(List.of(ackIds))));
  }

  public Reply metadata(String consumer) {
    return get("/v1/consumers/" + consumer + "/metadata");
  }

  /** Sends {@code body} as it is (any bytes, valid UTF-8 or not) with {@code method}. */
  public Reply sendBytes(String method, String path, byte[] body) {
    return send(HttpRequest.newBuilder(URI.create(base + path)).method(method, HttpRequest.BodyPublishers.ofByteArray(body)),
        new String(body, StandardCharsets.UTF_8));
  }

  private static String textOf(Object body) {
    return body instanceof JsonObject json ? json.encode() : String.valueOf(body);
  }

  private Reply send(HttpRequest.Builder request, String body) {
    if (authorization != null) {
      request.header("Authorization", authorization);
    }
    try {
      HttpResponse<String> response = CLIENT.send(request.timeout(Duration.ofSeconds(60)).build(),
          HttpResponse.BodyHandlers.ofString());
      Traffic.record(response, body);
      return new Reply(response.statusCode(), response.body(), response);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
