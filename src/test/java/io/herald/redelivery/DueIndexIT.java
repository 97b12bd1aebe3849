package io.herald.redelivery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.NodeConfig;
import io.herald.testing.RedisCli;
import io.herald.store.Keys;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** One HTTP verticle per node, so that each node's polls go through one instance's filings. */
@Timeout(60)
@NodeConfig("""
    {"http": {"instances": 1}}""")
class DueIndexIT extends GatewayTest {

  private static boolean filed(String consumer) {
    return RedisCli.send(redis.url(), Request.cmd(Command.ZSCORE).arg(Keys.DUE).arg(consumer)) != null;
  }

  @Test
  @DisplayName("a deadline filed after another node's scheduler consumed an earlier entry still wakes a waiting poll at its time")
  void deadlineAfterConsumedEntryIsFiled() {
    String topic = unique("due");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    // node B files the earlier deadline, node A a later one its filing leaves to B's entry
    http().publish(topic, events(0, 1));
    Reply onB = nodeB.http().poll(consumer, max(1));
    long firstDeadline = onB.events().getJsonObject(0).getLong("ackDeadline");
    // a millisecond later, so that A's deadline is strictly the later one
    await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.millis(redis.url()) > firstDeadline - 5000);
    Reply onA = nodeA.http().poll(consumer, max(1));
    nodeB.http().ack(consumer, onB.ackIds().get(0));
    nodeA.http().ack(consumer, onA.ackIds().get(0));
    // what the consumer remembers (hand-out records, ack bits) is timed work too: gone, so that at
    // the earlier deadline a scheduler finds nothing timed and removes the entry
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg("herald:{c:" + consumer + "}:memory")
        .arg("herald:{c:" + consumer + "}:forgets"));
    await().atMost(Duration.ofSeconds(15)).until(() -> !filed(consumer));

    http().publish(topic, event(2));
    Reply handed = nodeA.http().poll(consumer, max(1));
    long deadline = handed.events().getJsonObject(0).getLong("ackDeadline");
    long polledAt = RedisCli.millis(redis.url());
    CompletableFuture<Reply> waiting = CompletableFuture.supplyAsync(
        () -> nodeB.http().poll(consumer, max(1).put("waitMs", 20_000)));
    Reply redelivered = waiting.join();
    long answeredAt = RedisCli.millis(redis.url());
    assertEquals(List.of(2), redelivered.events().stream().map(e -> ((JsonObject) e).getInteger("payload")).toList());
    // woken by the scheduler at the deadline, not by the end of the wait 20 s later
    assertTrue(answeredAt < deadline + 5_000, "redelivered " + (answeredAt - deadline) + " ms after its deadline");
    assertTrue(answeredAt - polledAt < 15_000);
  }

  @Test
  @DisplayName("a deadline whose filing failed is filed once Redis takes it again")
  void failedFilingIsRetried() {
    String topic = unique("refile");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000), topic);
    http().publish(topic, event(1));
    // the due index unusable for a while: every filing (a ZADD) fails inside Redis
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg(Keys.DUE));
    RedisCli.send(redis.url(), Request.cmd(Command.SET).arg(Keys.DUE).arg("not a sorted set"));
    long failed = RedisCli.failedCalls(redis.url(), "zadd");
    try {
      assertEquals(1, nodeA.http().poll(consumer, max(1)).events().size());
      await().atMost(Duration.ofSeconds(5)).until(() -> RedisCli.failedCalls(redis.url(), "zadd") > failed);
    } finally {
      RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg(Keys.DUE));
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> filed(consumer));
  }
}
