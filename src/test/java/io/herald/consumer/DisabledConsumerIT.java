package io.herald.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.herald.testing.TestSocket;
import io.vertx.core.http.UpgradeRejectedException;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class DisabledConsumerIT extends GatewayTest {

  private static void disable(String consumer, String topic, JsonObject settings) {
    Reply put = http().putConsumer(consumer, settings.copy().put("enabled", false).put("topics", new JsonArray().add(topic)));
    assertEquals(200, put.status(), put.body());
  }

  @Test
  @DisplayName("a disabled consumer refuses each event for every consumer (CONSUMER_DISABLED naming it); nothing is stored anywhere")
  void refusesForAll() {
    String topic = unique("orders");
    String open = consumer(new JsonObject(), topic);
    String shut = consumer(new JsonObject(), topic);
    disable(shut, topic, new JsonObject());
    JsonArray results = http().publish(topic, events(1, 2)).results();
    for (int i = 0; i < 2; i++) {
      JsonObject result = results.getJsonObject(i);
      assertEquals("REJECTED", result.getString("status"));
      assertEquals("CONSUMER_DISABLED", result.getString("code"));
      assertEquals(new JsonObject().put("scope", "consumer").put("consumer", shut), result.getJsonObject("details"));
    }
    assertEquals(0, http().metadata(open).json().getLong("backlog"));
    assertEquals(0, http().metadata(shut).json().getLong("backlog"));
  }

  /** Disables the consumer in Redis only, as a change no node has heard of yet would be. */
  private static void disableUnannounced(String consumer, boolean refusesForAll) {
    String meta = "herald:{c:" + consumer + "}:meta";
    RedisCli.hset(redis.url(), meta, "rejectPublishWhenRefused", String.valueOf(refusesForAll));
    RedisCli.hset(redis.url(), meta, "enabled", "false");
  }

  @Test
  @DisplayName("a consumer disabled after the node read its settings still refuses the events for all: the others' copies are taken back")
  void disabledAfterSnapshotRefusesForAll() {
    String topic = unique("orders");
    String open = consumer(new JsonObject(), topic);
    String shut = consumer(new JsonObject(), topic);
    disableUnannounced(shut, true);
    JsonArray results = http().publish(topic, events(1, 2)).results();
    for (int i = 0; i < 2; i++) {
      JsonObject result = results.getJsonObject(i);
      assertEquals("REJECTED", result.getString("status"), result.encode());
      assertEquals("CONSUMER_DISABLED", result.getString("code"));
      assertEquals(new JsonObject().put("scope", "consumer").put("consumer", shut), result.getJsonObject("details"));
    }
    JsonObject metadata = http().metadata(open).json();
    assertEquals(0, metadata.getLong("backlog"), metadata.encode());
    assertEquals(0, metadata.getLong("spooledEvents"));
    // the events' sizes were in their backlog pairs (the packed layout): taken back, they count no more
    assertEquals(0, metadata.getLong("spooledBytes"));
    assertEquals(0, metadata.getJsonObject("totals").getLong("published"));
  }

  @Test
  @DisplayName("a consumer disabled after the node read its settings, with rejectPublishWhenRefused false, skips the events (discarded); the others keep them")
  void disabledAfterSnapshotSkips() {
    String topic = unique("orders");
    String open = consumer(new JsonObject(), topic);
    String shut = consumer(new JsonObject(), topic);
    disableUnannounced(shut, false);
    JsonObject result = http().publish(topic, event(1)).results().getJsonObject(0);
    assertEquals("CONFIRMED", result.getString("status"));
    assertEquals(1, result.getInteger("matched"));
    assertEquals(1, http().metadata(open).json().getLong("backlog"));
    assertEquals(1, http().metadata(shut).json().getJsonObject("totals").getLong("discarded"));
  }

  @Test
  @DisplayName("with rejectPublishWhenRefused false a disabled consumer skips the events (counted as discarded); the others get them")
  void skipsWhenNotRefusing() {
    String topic = unique("orders");
    String open = consumer(new JsonObject(), topic);
    String shut = consumer(new JsonObject(), topic);
    disable(shut, topic, new JsonObject().put("rejectPublishWhenRefused", false));
    JsonObject result = http().publish(topic, events(1, 2, 3)).results().getJsonObject(0);
    assertEquals("CONFIRMED", result.getString("status"));
    assertEquals(1, result.getInteger("matched"));
    assertEquals(3, http().metadata(open).json().getLong("backlog"));
    JsonObject shutMetadata = http().metadata(shut).json();
    assertEquals(0, shutMetadata.getLong("backlog"));
    assertEquals(3, shutMetadata.getJsonObject("totals").getLong("discarded"));
  }

  @Test
  @DisplayName("a disabled consumer's polls and upgrades get 409 CONSUMER_DISABLED; acks of what it was given still settle")
  void receivesNothing() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2));
    List<String> ackIds = http().poll(consumer, max(1)).ackIds();
    disable(consumer, topic, new JsonObject());
    for (TestNode node : new TestNode[] {nodeA, nodeB}) {
      Reply poll = node.http().poll(consumer, max(10));
      assertEquals(409, poll.status());
      assertEquals("CONSUMER_DISABLED", poll.errorCode());
    }
    UpgradeRejectedException upgrade = assertThrows(UpgradeRejectedException.class,
        () -> TestSocket.connect(nodeA.port(), "/v1/consumers/" + consumer + "/ws"));
    assertEquals(409, upgrade.getStatus());
    assertEquals("ACKED", http().ack(consumer, ackIds.get(0)).results().getJsonObject(0).getString("status"));
    assertEquals(1, http().metadata(consumer).json().getLong("backlog"));
  }

  @Test
  @DisplayName("the poll script itself refuses a disabled consumer: a socket opened before is told CONSUMER_DISABLED")
  void openSocketIsTold() {
    String topic = unique("orders");
    String consumer = consumer(new JsonObject(), topic);
    try (TestSocket socket = TestSocket.connect(nodeA.port(), "/v1/consumers/" + consumer + "/ws")) {
      disable(consumer, topic, new JsonObject());
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1).put("requestId", "p"));
      JsonObject answer = socket.next();
      assertEquals("CONSUMER_DISABLED", answer.getString("code"), answer.encode());
    }
  }
}
