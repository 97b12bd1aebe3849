package io.herald.publish;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.store.Keys;
import io.herald.testing.Http.Reply;
import io.herald.testing.TestCluster;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Idempotency claims on a Redis Cluster with redis.waitReplicas: they live in the topic's slot, not the consumers'. */
@Timeout(180)
class IdempotencyOnClusterIT {

  @Test
  @DisplayName("waitReplicas 1: a publish whose idempotency claim no replica took is not confirmed; after the claim's primary died and its replica took over, a retry stores the event once")
  void claimIsWaitedFor() {
    try (TestCluster cluster = TestCluster.start();
        TestNode node = TestNode.start(new JsonObject().put("redis", new JsonObject().put("mode", "cluster")
            .put("endpoints", cluster.endpoints()).put("waitReplicas", 1).put("timeoutMs", 5000)
            .put("waitTimeoutMs", 1000)))) {
      String consumer = "claims";
      int consumerSlot = cluster.slotOf(Keys.consumer(consumer).get(0));
      // a topic whose claims live on another primary than the consumer's spool
      String topic = java.util.stream.IntStream.iterate(0, i -> i + 1).mapToObj(i -> "orders/" + i)
          .filter(candidate -> !cluster.primaryOf(cluster.slotOf(Keys.idempotency(candidate, "order-42")))
              .equals(cluster.primaryOf(consumerSlot)))
          .findFirst().orElseThrow();
      assertEquals(201, node.http().putConsumer(consumer, new JsonObject().put("topics", new JsonArray().add(topic))).status());
      int claimSlot = cluster.slotOf(Keys.idempotency(topic, "order-42"));
      JsonObject event = new JsonObject().put("payload", "once").put("idempotencyKey", "order-42");

      cluster.pauseReplicaOf(claimSlot);
      Reply unconfirmed = node.http().publish(topic, event);
      // the claim is on its primary only: nothing is spooled, and the publisher is told to try again
      assertEquals(503, unconfirmed.status(), unconfirmed.body());
      assertEquals("OUTCOME_UNKNOWN", unconfirmed.errorCode());
      assertEquals(0, node.http().metadata(consumer).json().getLong("backlog"));

      String old = cluster.primaryOf(claimSlot);
      cluster.killPrimaryOfWithReplicaBehind(claimSlot);
      // back as the new primary's replica: waitReplicas 1 can be met again on that shard
      cluster.restart(old);
      // tried again, as a client does after OUTCOME_UNKNOWN, until the cluster serves the slot again
      Reply retried = await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
          .until(() -> node.http().publish(topic, event), reply -> reply.status() == 200);
      assertEquals("CONFIRMED", retried.results().getJsonObject(0).getString("status"), retried.body());
      Reply delivered = node.http().poll(consumer, new JsonObject().put("maxEvents", 10));
      assertEquals(List.of("once"), delivered.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList(),
          "the consumer holds the event once");
    }
  }
}
