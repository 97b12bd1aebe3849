package io.herald.store;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.herald.testing.RedisMonitor;
import io.herald.testing.TestSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Every key a script touches is one the node declared: on a Redis Cluster a key built inside a
 * script cannot be routed by, nor migrated safely. Redis' MONITOR shows each command a script runs;
 * every consumer key among their arguments must be one of the names the node passes.
 */
class DeclaredKeysIT extends GatewayTest {
  private static final Pattern BATCH = Pattern.compile("batch:[0-9a-f]{32}");

  @Test
  @DisplayName("through every path of an event's life (polls, acks, nacks, extends, lapses, dead letters, drops, redrives, histories, auto acks, delays, keys), scripts touch only declared keys")
  void scriptsTouchOnlyDeclaredKeys() throws Exception {
    String topic = unique("declared");
    String main = consumer(new JsonObject().put("ordering", "key").put("redeliverOnDisconnect", true)
        .put("redelivery", new JsonObject().put("initialDelayMs", 0).put("maxDeliveries", 2)), topic);
    String dropping = consumer(new JsonObject().put("deadLetter", false).put("errorQueue", false), topic);
    String auto = consumer(new JsonObject().put("ackMode", "auto"), topic);
    List<String> scriptCommands;
    try (RedisMonitor monitor = RedisMonitor.start(redis.url())) {
      live(topic, main, dropping, auto);
      scriptCommands = monitor.stop();
    }

    Set<String> undeclared = new TreeSet<>();
    Set<String> memoryFields = new TreeSet<>();
    for (String line : scriptCommands) {
      List<String> args = RedisMonitor.arguments(line);
      String command = args.get(0).toUpperCase();
      for (int i = 1; i < args.size(); i++) {
        String arg = args.get(i);
        if (!arg.startsWith("herald:{c:")) {
          continue;
        }
        String consumer = Keys.consumerOf(arg);
        String name = arg.substring(arg.indexOf("}:") + 2);
        boolean declared = Keys.spool(consumer).contains(arg) || BATCH.matcher(name).matches()
            // consumer_delete.lua's
            || arg.equals(Keys.leaving(consumer))
            // history.lua reads the list an event's history was kept in before 0.9.0
            || (command.equals("LRANGE") && name.startsWith("history:"));
        if (!declared) {
          undeclared.add(command + " " + arg);
        }
        if (name.equals("memory") && command.equals("HSET")) {
          memoryFields.add(args.get(i + 1).substring(0, 2));
        }
      }
    }
    assertEquals(Set.of(), undeclared, "keys touched by scripts and not declared");
    // the paths that once built keys of their own ran: histories, hand-out records, ack and drop memory
    assertEquals(Set.of("a:", "d:", "h:", "r:"), memoryFields);
  }

  private static void live(String topic, String main, String dropping, String auto) {
    JsonArray events = new JsonArray()
        .add(new JsonObject().put("payload", 1).put("key", "k1"))
        .add(new JsonObject().put("payload", 2).put("key", "k1"))
        .add(new JsonObject().put("payload", 3).put("ttlMs", 60_000).put("idempotencyKey", unique("idem")))
        .add(new JsonObject().put("payload", 4).put("delayMs", 60_000))
        .add(new JsonObject().put("payload", 5));
    assertEquals(200, http().publish(topic, new JsonObject().put("events", events)).status());

    // auto acks: handed out once and acked, an event leaves only its ack bit, no history
    Reply autoBatch = http().poll(auto, max(10));
    assertEquals(4, autoBatch.eventIds().size(), autoBatch.body());
    assertEquals(404, http().get("/v1/consumers/" + auto + "/events/" + autoBatch.eventIds().get(0)).status());

    // main: a nack, then a second delivery over a socket that closes with it: that delivery lapses,
    // and with maxDeliveries 2 the event is dead-lettered
    Reply first = http().poll(main, max(1));
    String e1 = first.eventIds().get(0);
    settle(main, "nacks", new JsonObject().put("ackIds", new JsonArray().add(first.ackIds().get(0)))
        .put("action", "REQUEUE").put("delayMs", 0).put("reason", "try \"again\"\n"));
    try (TestSocket socket = TestSocket.connect(nodeA.port(), "/v1/consumers/" + main + "/ws")) {
      socket.send(new JsonObject().put("op", "poll").put("maxEvents", 1));
      assertEquals(e1, socket.next().getJsonArray("events").getJsonObject(0).getString("eventId"));
    }
    String deadAckId = awaitQueued(main, "dead-letters", e1);
    history(main, e1);

    // its key's next event may go out now: a batch extended in part, then acked whole
    Reply second = http().poll(main, max(2));
    assertEquals(2, second.ackIds().size(), second.body());
    settle(main, "extend", new JsonObject().put("ackIds", new JsonArray().add(second.ackIds().get(1)))
        .put("extendMs", 60_000));
    assertEquals(200, http().post("/v1/consumers/" + main + "/acks",
        new JsonObject().put("batchAckIds", new JsonArray().add(second.json().getString("batchAckId")))).status());

    // redriven, then acked; the last one rejected to the error queue and acked there
    assertEquals(200, http().post("/v1/consumers/" + main + "/dead-letters/redrive",
        new JsonObject().put("eventIds", new JsonArray().add(e1))).status());
    Reply again = http().poll(main, max(10).put("waitMs", 5000));
    assertEquals(2, again.ackIds().size(), again.body());
    int redriven = again.eventIds().indexOf(e1);
    String last = again.eventIds().get(1 - redriven);
    http().ack(main, again.ackIds().get(redriven));
    settle(main, "nacks", new JsonObject().put("ackIds", new JsonArray().add(again.ackIds().get(1 - redriven)))
        .put("action", "REJECT"));
    String errorAckId = awaitQueued(main, "errors", last);
    settle(main, "errors/acks", new JsonObject().put("ackIds", new JsonArray().add(errorAckId)));
    // an ackId of its earlier stay in the dead-letter queue acks nothing now
    settle(main, "dead-letters/acks", new JsonObject().put("ackIds", new JsonArray().add(deadAckId)));
    history(main, e1);
    history(main, last);

    // dropping: a rejected event is dropped, and remembered as such
    Reply dropped = http().poll(dropping, max(10));
    JsonObject reject = new JsonObject().put("ackIds", new JsonArray().add(dropped.ackIds().get(0)))
        .put("action", "REJECT");
    assertEquals("DROPPED", settle(dropping, "nacks", reject).getJsonObject(0).getString("status"));
    assertEquals("DEAD_LETTERED", settle(dropping, "nacks", reject).getJsonObject(0).getString("status"));
    assertEquals(200, http().metadata(dropping).status());
    assertEquals(204, http().delete("/v1/admin/consumers/" + dropping).status());
  }

  /** Reads the consumer's dead-letter or error queue until it holds the event; the ackId of that read. */
  private static String awaitQueued(String consumer, String queue, String eventId) {
    AtomicReference<String> ackId = new AtomicReference<>();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50)).until(() -> {
      Reply read = http().post("/v1/consumers/" + consumer + "/" + queue + "/poll", new JsonObject());
      int at = read.eventIds().indexOf(eventId);
      if (at >= 0) {
        ackId.set(read.ackIds().get(at));
      }
      return at >= 0;
    });
    return ackId.get();
  }

  private static JsonArray settle(String consumer, String what, JsonObject body) {
    Reply reply = http().post("/v1/consumers/" + consumer + "/" + what, body);
    assertEquals(200, reply.status(), reply.body());
    return reply.results();
  }

  private static void history(String consumer, String eventId) {
    Reply reply = http().get("/v1/consumers/" + consumer + "/events/" + eventId);
    assertEquals(200, reply.status(), reply.body());
  }
}
