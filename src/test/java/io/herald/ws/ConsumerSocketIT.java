package io.herald.ws;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.RawWebSocket;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class ConsumerSocketIT extends GatewayTest {

  private static TestSocket open(String consumer) {
    return nodeA.consumerSocket(consumer);
  }

  @Test
  @DisplayName("a client that sends 100,000 frames and reads none is held back by TCP, not buffered for; other clients are served meanwhile, and every answer comes once it reads")
  void clientThatNeverReadsIsHeldBack() {
    String topic = unique("flood");
    String consumer = consumer(new JsonObject(), topic);
    int frames = 100_000;
    byte[] ping = RawWebSocket.textFrame(new JsonObject().put("op", "ping").put("requestId", "x".repeat(500)).encode());
    ByteBuffer flood = ByteBuffer.allocate(ping.length * frames);
    for (int i = 0; i < frames; i++) {
      flood.put(ping);
    }
    flood.flip();
    try (RawWebSocket flooder = RawWebSocket.connect(nodeA.port(), "/v1/consumers/" + consumer + "/ws")) {
      flooder.writeWithoutReading(flood, Duration.ofSeconds(1));
      // the node stopped reading once its answers filled the write queue: the kernel's buffers hold the rest
      assertTrue(flood.position() < 32 << 20, "the node took " + (flood.position() >> 20) + " MiB of pings unread");
      try (TestSocket other = open(consumer)) {
        other.send(new JsonObject().put("op", "ping"));
        assertEquals("pong", other.next().getString("type"));
      }
      http().publish(topic, event(1));
      assertEquals(1, http().poll(consumer, max(10)).events().size());
      assertEquals(frames, flooder.exchange(flood, frames, "\"pong\""));
    }
  }

  @Test
  @DisplayName("ping answers pong with the requestId echoed")
  void pingPong() {
    String consumer = consumer(new JsonObject(), unique("ping"));
    try (TestSocket socket = open(consumer)) {
      socket.send(new JsonObject().put("op", "ping").put("requestId", "r-1"));
      assertEquals(new JsonObject().put("type", "pong").put("requestId", "r-1"), socket.next());
    }
  }

  @Test
  @DisplayName("poll over the socket hands out a batch; acks by ackId and by batchAckId answer per event")
  void pollAndAck() {
    String topic = unique("wsack");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events("a", "b", "c"));
    try (TestSocket socket = open(consumer)) {
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 2).put("requestId", 7));
      JsonObject batch = socket.next();
      assertEquals("batch", batch.getString("type"));
      assertEquals(7, batch.getInteger("requestId"));
      JsonArray events = batch.getJsonArray("events");
      assertEquals(List.of("a", "b"), events.stream().map(e -> ((JsonObject) e).getString("payload")).toList());
      assertEquals(1, events.getJsonObject(0).getInteger("deliveryCount"));

      String first = events.getJsonObject(0).getString("ackId");
      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(first)));
      JsonObject acked = socket.next();
      assertEquals("ackResult", acked.getString("type"));
      assertEquals("ACKED", acked.getJsonArray("results").getJsonObject(0).getString("status"));

      socket.send(new JsonObject().put("op", "ack").put("batchAckId", batch.getString("batchAckId")));
      JsonArray rows = socket.next().getJsonArray("results");
      assertEquals(List.of("ALREADY_ACKED", "ACKED"), rows.stream().map(r -> ((JsonObject) r).getString("status")).toList());
    }
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
    assertEquals(0, http().metadata(consumer).json().getLong("unacked"));
  }

  @Test
  @DisplayName("events polled over a socket can be acked over HTTP, and the other way round")
  void mixesWithHttp() {
    String topic = unique("mix");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    try (TestSocket socket = open(consumer)) {
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
      String overSocket = socket.next().getJsonArray("events").getJsonObject(0).getString("ackId");
      String overHttp = http().poll(consumer, max(1)).ackIds().get(0);
      assertEquals("ACKED", http().ack(consumer, overSocket).results().getJsonObject(0).getString("status"));
      socket.send(new JsonObject().put("op", "ack").put("ackIds", new JsonArray().add(overHttp)));
      assertEquals("ACKED", socket.next().getJsonArray("results").getJsonObject(0).getString("status"));
    }
  }

  @Test
  @DisplayName("malformed frames get an error frame in the protocol's envelope and the socket stays usable")
  void badFramesKeepSocket() {
    String consumer = consumer(new JsonObject(), unique("bad"));
    try (TestSocket socket = open(consumer)) {
      socket.sendText("{not json");
      JsonObject notJson = socket.next();
      assertEquals("error", notJson.getString("type"));
      assertEquals(400, notJson.getInteger("status"));
      assertEquals("INVALID_REQUEST", notJson.getString("code"));

      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 0).put("requestId", "r-2"));
      JsonObject badRange = socket.next();
      assertEquals("r-2", badRange.getString("requestId"));
      assertEquals("maxEvents", badRange.getJsonObject("details").getString("field"));

      socket.send(new JsonObject().put("op", "teleport").put("requestId", "r-3"));
      assertEquals("INVALID_REQUEST", socket.next().getString("code"));
      socket.send(new JsonObject().put("op", "nack").put("requestId", "r-4"));
      JsonObject noAckIds = socket.next();
      assertEquals("r-4", noAckIds.getValue("requestId"));
      assertEquals("ackIds", noAckIds.getJsonObject("details").getString("field"), noAckIds.encode());

      socket.send(new JsonObject().put("op", "ping").put("requestId", "r-5"));
      assertEquals("pong", socket.next().getString("type"));
    }
  }

  @Test
  @DisplayName("an upgrade for an unknown consumer is refused in the handshake with 404")
  void unknownConsumerRefusedInHandshake() {
    UpgradeRejectedException refused = assertThrows(UpgradeRejectedException.class, () -> open("nobody-" + unique("x")));
    assertEquals(404, refused.getStatus());
  }

  @Test
  @DisplayName("a message over the frame limit closes the socket with 1009")
  void oversizedMessageCloses() {
    String consumer = consumer(new JsonObject(), unique("big"));
    // sent in 64 KiB frames: the message, not any one frame, is over the limit
    try (TestSocket socket = TestSocket.connect(nodeA.port(), "/v1/consumers/" + consumer + "/ws", 65536)) {
      socket.sendText("{\"op\":\"ping\",\"pad\":\"" + "x".repeat((4 << 20) + 10) + "\"}");
      assertEquals((short) 1009, socket.awaitClose());
    }
  }

  @Test
  @DisplayName("a poll with nothing to hand out answers an empty batch at once")
  void emptyPoll() {
    String consumer = consumer(new JsonObject(), unique("empty"));
    try (TestSocket socket = open(consumer)) {
      socket.send(new JsonObject().put("op", "poll"));
      JsonObject batch = socket.next();
      assertEquals(0, batch.getJsonArray("events").size());
      assertNull(batch.getString("batchAckId"));
    }
  }
}
