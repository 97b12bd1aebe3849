package io.herald.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.RedisProcess;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class CliIT extends GatewayTest {

  /** A command's exit code and what it printed. */
  private record Run(int exit, String out, String err) {
    List<JsonObject> lines() {
      return out.lines().map(JsonObject::new).toList();
    }
  }

  private static Run cli(String stdin, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = HeraldCli.run(args, new PrintWriter(out), new PrintWriter(err),
        new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
    return new Run(exit, out.toString(), err.toString());
  }

  private static String url() {
    return "http://127.0.0.1:" + nodeA.port();
  }

  private static List<Object> payloads(String consumer) {
    List<Object> payloads = new ArrayList<>();
    Reply batch = http().poll(consumer, max(100));
    batch.events().forEach(e -> payloads.add(((JsonObject) e).getValue("payload")));
    return payloads;
  }

  @Test
  @DisplayName("publish TOPIC PAYLOAD...: one event per argument (JSON, or a word as a string), one JSON line per event, exit 0")
  void publishArguments() {
    String topic = unique("cli/args");
    String consumer = consumer(new JsonObject(), topic);
    Run run = cli("", "publish", "--url", url(), topic, "1", "{\"total\":12.5}", "hello");
    assertEquals(0, run.exit(), run.err());
    List<JsonObject> results = run.lines();
    assertEquals(List.of("CONFIRMED", "CONFIRMED", "CONFIRMED"), results.stream().map(r -> r.getString("status")).toList());
    assertEquals(List.of(0, 1, 2), results.stream().map(r -> r.getInteger("index")).toList());
    assertEquals(List.of(1, new JsonObject().put("total", 12.5), "hello"), payloads(consumer));
  }

  @Test
  @DisplayName("publish from standard input: a line per event, in requests of --batch, with --key; every event has an idempotencyKey")
  void publishStandardInput() {
    String topic = unique("cli/stdin");
    String consumer = consumer(new JsonObject(), topic);
    Run run = cli("1\n2\n\n3\n4\n5\n", "publish", "--url", url(), "--batch", "2", "--key", "k-1", topic);
    assertEquals(0, run.exit(), run.err());
    assertEquals(List.of(0, 1, 2, 3, 4), run.lines().stream().map(r -> r.getInteger("index")).toList());
    Reply batch = http().poll(consumer, max(100));
    assertEquals(List.of(1, 2, 3, 4, 5), batch.events().stream().map(e -> ((JsonObject) e).getValue("payload")).toList());
    assertTrue(batch.events().stream().allMatch(e -> "k-1".equals(((JsonObject) e).getString("key"))), batch.body());
  }

  @Test
  @DisplayName("publish --events takes whole events; an event refused on its own, or a request refused whole, exits 1 and says why")
  void refusals() {
    String topic = unique("cli/limits");
    consumer(new JsonObject(), topic);
    assertEquals(200, http().put("/v1/admin/topics/" + topic, new JsonObject().put("maxEventBytes", 1024)).status());
    Run partly = cli("{\"payload\":\"small\",\"headers\":{\"a\":\"b\"}}\n{\"payload\":\"" + "x".repeat(2000) + "\"}\n",
        "publish", "--events", "--url", url(), topic);
    assertEquals(1, partly.exit(), partly.err());
    assertEquals(List.of("CONFIRMED", "REJECTED"), partly.lines().stream().map(r -> r.getString("status")).toList());
    assertEquals("MESSAGE_TOO_LARGE", partly.lines().get(1).getString("code"));

    assertEquals(200, http().put("/v1/admin/topics/" + topic, new JsonObject().put("enabled", false)).status());
    Run whole = cli("", "publish", "--url", url(), topic, "1");
    assertEquals(1, whole.exit());
    assertTrue(whole.err().contains("TOPIC_DISABLED"), whole.err());
    assertEquals("", whole.out());
  }

  @Test
  @DisplayName("a gateway that does not answer: publish tries 3 times, then exits 3 saying so")
  void unreachable() {
    Run run = cli("", "publish", "--url", "http://127.0.0.1:" + RedisProcess.freePort(), "cli/nowhere", "1");
    assertEquals(3, run.exit(), run.out());
    assertTrue(run.err().contains("after 3 tries"), run.err());
  }

  @Test
  @DisplayName("stats: a row per consumer with its counts, and the spool; --json gives the same as JSON")
  void stats() {
    String topic = unique("cli/stats");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Run table = cli("", "stats", "--url", url());
    assertEquals(0, table.exit(), table.err());
    String row = table.out().lines().filter(line -> line.startsWith(consumer + " ")).findFirst().orElseThrow();
    assertEquals(consumer + " 3 0 0 0 0 -", row.replaceAll("\\s+", " ").trim());
    assertTrue(table.out().contains("spool: "), table.out());

    Run json = cli("", "stats", "--json", "--url", url());
    assertEquals(0, json.exit(), json.err());
    JsonObject figures = new JsonObject(json.out());
    assertTrue(figures.getJsonArray("consumers").stream().anyMatch(c -> ((JsonObject) c).getString("consumer").equals(consumer)
        && ((JsonObject) c).getLong("backlog") == 3), json.out());
    assertEquals("CLEAR", figures.getJsonObject("stats").getJsonObject("spool").getString("alert"));
  }

  @Test
  @DisplayName("--help lists the commands (exit 0); a wrong option is a usage error (exit 2)")
  void help() {
    Run help = cli("", "--help");
    assertEquals(0, help.exit());
    assertTrue(help.out().contains("publish") && help.out().contains("stats") && help.out().contains("make-key"), help.out());
    Run wrong = cli("", "publish", "--no-such-option", "t", "1");
    assertEquals(2, wrong.exit());
    assertTrue(wrong.err().contains("--no-such-option"), wrong.err());
  }
}
