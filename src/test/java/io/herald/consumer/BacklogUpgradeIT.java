package io.herald.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.herald.testing.GatewayTest;
import io.herald.testing.RedisCli;
import io.herald.testing.TestNode;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class BacklogUpgradeIT extends GatewayTest {

  @Test
  @DisplayName("a backlog kept by 0.6.0 (a sorted set) moves to the head of the backlog list when a node starts: nothing is lost, arrival order holds")
  void legacyBacklogMovesAtStart() {
    String topic = unique("legacy");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 1000), topic);
    http().publish(topic, events(1, 2, 3));
    // what 0.6.0 left: the same events in a sorted set by arrival sequence, no list
    String prefix = "herald:{c:" + consumer + "}:";
    Response pairs = RedisCli.send(redis.url(), Request.cmd(Command.LRANGE).arg(prefix + "arrivals").arg(0).arg(-1));
    RedisCli.send(redis.url(), Request.cmd(Command.DEL).arg(prefix + "arrivals"));
    Request legacy = Request.cmd(Command.ZADD).arg(prefix + "backlog");
    for (int i = 0; i < pairs.size(); i += 2) {
      // 0.6.0 kept every event in events: a stub the pair carries (the packed layout) goes there
      String[] member = pairs.get(i + 1).toString().split(":", 2);
      if (member.length == 2) {
        RedisCli.send(redis.url(), Request.cmd(Command.HSET).arg(prefix + "events").arg(pairs.get(i).toString())
            .arg(member[1]));
      }
      legacy.arg(member[0]).arg(pairs.get(i).toString());
    }
    RedisCli.send(redis.url(), legacy);
    // published after them, by a node of this version
    http().publish(topic, events(4));

    try (TestNode upgraded = TestNode.start(redis)) {
      assertFalse(RedisCli.exists(redis.url(), prefix + "backlog"));
      assertEquals(4, upgraded.http().metadata(consumer).json().getLong("backlog"));
      List<Object> payloads = upgraded.http().poll(consumer, max(10)).events().stream()
          .map(e -> ((JsonObject) e).getValue("payload")).toList();
      assertEquals(List.of(1, 2, 3, 4), payloads);
    }
  }
}
