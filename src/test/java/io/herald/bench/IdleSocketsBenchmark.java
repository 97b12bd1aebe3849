package io.herald.bench;

import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Not a test: opens {@code sockets} WebSockets subscribed to one consumer on one gateway process
 * (-Xmx1g) and prints the gateway's heap after a full GC, before and with the sockets.
 *
 * <pre>bench/sockets [sockets=10000]</pre>
 */
public final class IdleSocketsBenchmark {
  public static void main(String[] args) throws Exception {
    int count = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
    Vertx vertx = Vertx.vertx();
    try (BenchGateway gateway = BenchGateway.start()) {
      HttpClient http = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1")
          .setDefaultPort(gateway.port()));
      gateway.awaitReady(vertx, http);
      http.request(HttpMethod.PUT, "/v1/admin/consumers/idle")
          .compose(request -> request.send(new JsonObject().put("topics", new JsonArray().add("idle")).encode()))
          .await();
      long before = gateway.heapUsedKb();
      WebSocketClient client = vertx.createWebSocketClient(new WebSocketClientOptions().setMaxConnections(count + 10));
      AtomicInteger subscribed = new AtomicInteger();
      Promise<Void> all = Promise.promise();
      long start = System.nanoTime();
      for (int i = 0; i < count; i++) {
        client.connect(new WebSocketConnectOptions().setHost("127.0.0.1").setPort(gateway.port())
                .setURI("/v1/consumers/idle/ws"))
            .onSuccess(socket -> {
              socket.textMessageHandler(text -> {
                if (text.contains("\"subscribed\"") && subscribed.incrementAndGet() == count) {
                  all.tryComplete();
                }
              });
              socket.writeTextMessage("{\"op\":\"subscribe\",\"window\":10}");
            })
            .onFailure(all::tryFail);
      }
      all.future().await();
      double seconds = (System.nanoTime() - start) / 1e9;
      long with = gateway.heapUsedKb();
      System.out.printf("%,d subscribed sockets in %.1f s; gateway heap after full GC: %,d KiB before, %,d KiB"
          + " with them (%,d bytes per socket)%n", count, seconds, before, with, (with - before) * 1024 / count);
    }
    System.exit(0);
  }
}
