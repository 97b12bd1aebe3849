package io.herald.console;

import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A console's live stream ({@code GET /v1/admin/live}) read as a browser would: its figures events, in order. */
final class LiveStream implements AutoCloseable {
  /** What the queue holds once the server ended the stream. */
  private static final JsonObject ENDED = new JsonObject().put("ended", true);
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  private final InputStream body;
  private final BlockingQueue<JsonObject> events = new LinkedBlockingQueue<>();
  private volatile boolean ended;

  private LiveStream(InputStream body) {
    this.body = body;
    Thread reader = new Thread(this::read, "live-stream");
    reader.setDaemon(true);
    reader.start();
  }

  static LiveStream open(int port, String token) throws IOException, InterruptedException {
    HttpResponse<InputStream> response = CLIENT.send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + "/v1/admin/live"))
        .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofInputStream());
    if (response.statusCode() != 200 || !response.headers().firstValue("content-type").orElse("")
        .startsWith("text/event-stream")) {
      throw new AssertionError("not a live stream: " + response.statusCode() + " " + new String(response.body().readAllBytes()));
    }
    return new LiveStream(response.body());
  }

  private void read() {
    try (BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
      String event = null;
      for (String line = lines.readLine(); line != null; line = lines.readLine()) {
        if (line.startsWith("event: ")) {
          event = line.substring(7);
        } else if (line.startsWith("data: ") && "figures".equals(event)) {
          events.add(new JsonObject(line.substring(6)));
        } else if (line.isEmpty()) {
          event = null;
        }
      }
    } catch (IOException closed) {
      // closed by close(), or the connection dropped: either way the stream is over
    } finally {
      ended = true;
      events.add(ENDED);
    }
  }

  /** The next figures event that {@code matches}, waiting at most {@code within}. */
  JsonObject next(Predicate<JsonObject> matches, Duration within) throws InterruptedException {
    long until = System.nanoTime() + within.toNanos();
    for (JsonObject event; (event = events.poll(until - System.nanoTime(), TimeUnit.NANOSECONDS)) != null; ) {
      if (event == ENDED) {
        events.add(ENDED);
        throw new AssertionError("the live stream ended");
      }
      if (matches.test(event)) {
        return event;
      }
    }
    throw new AssertionError("no matching figures within " + within);
  }

  /** Whether the server ended the stream, waiting at most {@code within}. */
  boolean endsWithin(Duration within) throws InterruptedException {
    long until = System.nanoTime() + within.toNanos();
    while (!ended && System.nanoTime() < until) {
      events.poll(10, TimeUnit.MILLISECONDS);
    }
    return ended;
  }

  /** A consumer's row in a figures event, or null. */
  static JsonObject row(JsonObject figures, String consumer) {
    return figures.getJsonArray("consumers").stream().map(JsonObject.class::cast)
        .filter(row -> row.getString("consumer").equals(consumer)).findFirst().orElse(null);
  }

  @Override
  public void close() throws IOException {
    body.close();
  }
}
