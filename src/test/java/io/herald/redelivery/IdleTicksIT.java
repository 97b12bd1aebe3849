package io.herald.redelivery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.Keys;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisMonitor;
import io.vertx.core.json.JsonObject;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class IdleTicksIT extends GatewayTest {

  @Test
  @DisplayName("while nothing is due the due index is read about once a second per node, not every tick (10 ms here), and a deadline still brings its redelivery")
  void idleIndexIsReadSeldom() throws Exception {
    String topic = unique("idle");
    String consumer = consumer(new JsonObject().put("ackTimeoutMs", 5000)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0)), topic);
    http().publish(topic, event("once"));
    String eventId = http().poll(consumer, max(1)).eventIds().get(0);

    List<String> scriptCommands;
    try (RedisMonitor monitor = RedisMonitor.start(redis.url())) {
      // waits out the 5 s deadline: the scheduler of the node that filed it wakes at its time
      Reply redelivered = nodeB.http().poll(consumer, max(1).put("waitMs", 20_000));
      assertEquals(List.of(eventId), redelivered.eventIds());
      scriptCommands = monitor.stop();
    }
    long reads = scriptCommands.stream()
        .filter(line -> line.startsWith("\"ZRANGEBYSCORE\" \"" + Keys.DUE + "\" \"-inf\"")).count();
    // two nodes ticking every 10 ms would read it about 1,000 times in those 5 s
    assertTrue(reads > 0 && reads < 60, reads + " reads of the due index");
  }
}
