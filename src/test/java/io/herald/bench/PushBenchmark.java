package io.herald.bench;

import io.vertx.core.Promise;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: measures publish → push → ack over one consumer WebSocket on one gateway node (its
 * own process, the fat jar) on a real Redis (AOF, fsync every second).
 *
 * <pre>bench/push [events] [rate]</pre>
 *
 * Phase 1, throughput: {@code events} events of 256 bytes published over HTTP (10 publishers, 100
 * events per request), pushed to one socket subscribed with a window of {@value #WINDOW}, each batch
 * acked over the socket by its batchAckId as it arrives.
 * Phase 2, latency: single-event publishes at {@code rate} events/s for 10 s to one subscribed
 * socket; publish-confirm and publish-to-delivery (arrival at the socket) percentiles.
 */
public final class PushBenchmark implements BenchClient.Phases {
  private static final int WINDOW = 2000;

  private final BenchClient client;

  private PushBenchmark(BenchClient client) {
    this.client = client;
  }

  public static void main(String[] args) throws Exception {
    BenchClient.run(args, PushBenchmark::new);
  }

  @Override
  public void throughput(String label, int total) {
    BenchClient.CpuTimes before = client.cpu();
    String topic = "push/" + System.nanoTime();
    Promise<Void> allAcked = Promise.promise();
    WebSocket socket = subscribe(client.createConsumer(topic), total, allAcked, null);
    long start = System.nanoTime();
    client.vertx.runOnContext(v -> client.publishAll(topic, total));
    allAcked.future().await();
    double seconds = (System.nanoTime() - start) / 1e9;
    socket.close().await();
    System.out.printf("%-10s %,d events published, pushed and acked over one socket in %.2f s: %,.0f events/s (%s)%n",
        label, total, seconds, total / seconds, client.cpu().since(before));
  }

  @Override
  public void latency(int rate, int seconds) {
    String topic = "push-latency/" + System.nanoTime();
    int total = rate * seconds;
    long[] confirm = new long[total];
    BenchClient.Latencies delivery = new BenchClient.Latencies(total);
    Promise<Void> allAcked = Promise.promise();
    WebSocket socket = subscribe(client.createConsumer(topic), total, allAcked, delivery);
    client.vertx.runOnContext(v -> client.publishAtRate(topic, rate, confirm));
    allAcked.future().await();
    socket.close().await();
    BenchClient.printLatency("one subscribed WebSocket", rate, seconds, confirm, delivery);
  }

  /**
   * Opens a socket of {@code consumer}, subscribes, and acks each pushed batch by its batchAckId;
   * completes {@code allAcked} once {@code total} events were acked. Returns when subscribed.
   */
  private WebSocket subscribe(String consumer, int total, Promise<Void> allAcked, BenchClient.Latencies latency) {
    WebSocket socket = client.vertx.createWebSocketClient(new WebSocketClientOptions().setMaxMessageSize(64 << 20)
            .setMaxFrameSize(64 << 20))
        .connect(new WebSocketConnectOptions().setHost("127.0.0.1").setPort(client.gateway.port())
            .setURI("/v1/consumers/" + consumer + "/ws"))
        .await();
    Promise<Void> subscribed = Promise.promise();
    AtomicLong acked = new AtomicLong();
    socket.textMessageHandler(text -> {
      JsonObject frame = new JsonObject(text);
      switch (frame.getString("type")) {
        case "subscribed" -> subscribed.complete();
        case "batch" -> {
          long now = System.nanoTime();
          if (latency != null) {
            frame.getJsonArray("events").forEach(event -> latency.delivered((JsonObject) event, now));
          }
          socket.writeTextMessage(new JsonObject().put("op", "ack").put("batchAckId", frame.getString("batchAckId"))
              .encode());
        }
        case "ackResult" -> {
          if (acked.addAndGet(frame.getJsonArray("results").size()) >= total) {
            allAcked.tryComplete();
          }
        }
        default -> allAcked.tryFail("unexpected frame: " + text);
      }
    });
    socket.writeTextMessage(new JsonObject().put("op", "subscribe").put("window", WINDOW).encode());
    subscribed.future().await();
    return socket;
  }
}
