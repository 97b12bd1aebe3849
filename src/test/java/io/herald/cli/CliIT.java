package io.herald.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.RedisProcess;
import io.herald.testing.GatewayTest;
import io.herald.testing.Http.Reply;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
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
  @DisplayName("consume: prints the events as delivered, a JSON line each, acks each batch, and stops when nothing is left")
  void consumeAcks() {
    String topic = unique("cli/consume");
    String consumer = consumer(new JsonObject().put("maxPollRecords", 2), topic);
    http().publish(topic, events(1, 2, 3, 4, 5));
    Run run = cli("", "consume", "--url", url(), "--wait", "0", consumer);
    assertEquals(0, run.exit(), run.err());
    List<JsonObject> events = run.lines();
    assertEquals(List.of(1, 2, 3, 4, 5), events.stream().map(e -> e.getValue("payload")).toList());
    assertTrue(events.stream().allMatch(e -> e.getString("ackId") != null && e.getInteger("deliveryCount") == 1), run.out());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getLong("backlog"), metadata.encode());
    assertEquals(0, metadata.getLong("unacked"), metadata.encode());
    assertEquals(5, metadata.getJsonObject("totals").getLong("acked"), metadata.encode());
  }

  @Test
  @DisplayName("consume --count N prints and acks N events only; --ack none leaves what it printed unacked")
  void consumeCountAndNoAck() {
    String topic = unique("cli/count");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3, 4, 5));
    Run two = cli("", "consume", "--url", url(), "--count", "2", consumer);
    assertEquals(0, two.exit(), two.err());
    assertEquals(List.of(1, 2), two.lines().stream().map(e -> e.getValue("payload")).toList());
    Run rest = cli("", "consume", "--url", url(), "--ack", "none", "--wait", "0", consumer);
    assertEquals(0, rest.exit(), rest.err());
    assertEquals(List.of(3, 4, 5), rest.lines().stream().map(e -> e.getValue("payload")).toList());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(2, metadata.getJsonObject("totals").getLong("acked"), metadata.encode());
    assertEquals(3, metadata.getLong("unacked"), metadata.encode());
  }

  @Test
  @DisplayName("consume into an output that was closed (a pipe whose reader left) acks nothing it could not write")
  void consumeIntoClosedOutput() {
    String topic = unique("cli/pipe");
    String consumer = consumer(new JsonObject(), topic);
    http().publish(topic, events(1, 2, 3));
    Writer closedPipe = new Writer() {
      @Override
      public void write(char[] chars, int offset, int length) throws IOException {
        throw new IOException("Broken pipe");
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    StringWriter err = new StringWriter();
    int exit = HeraldCli.run(new String[] {"consume", "--url", url(), consumer}, new PrintWriter(closedPipe),
        new PrintWriter(err), new ByteArrayInputStream(new byte[0]));
    assertEquals(0, exit, err.toString());
    assertTrue(err.toString().contains("left unacked"), err.toString());
    JsonObject metadata = http().metadata(consumer).json();
    assertEquals(0, metadata.getJsonObject("totals").getLong("acked"), metadata.encode());
    assertEquals(3, metadata.getLong("unacked"), metadata.encode());
  }

  @Test
  @DisplayName("consume --follow waits for events published later; a blocked consumer's 429 is waited out (Retry-After)")
  void consumeFollowsThroughBlock() throws Exception {
    String topic = unique("cli/follow");
    String consumer = consumer(new JsonObject().put("rateLimit", new JsonObject().put("tps", 1).put("blockMs", 3000)), topic);
    while (http().poll(consumer, new JsonObject()).status() != 429) {
      // two polls in one second block the consumer for 3 s
    }
    CompletableFuture<Run> follow = CompletableFuture.supplyAsync(
        () -> cli("", "consume", "--url", url(), "--follow", "--count", "2", consumer));
    http().publish(topic, events("late-1", "late-2"));
    Run run = follow.get(30, TimeUnit.SECONDS);
    assertEquals(0, run.exit(), run.err());
    assertEquals(List.of("late-1", "late-2"), run.lines().stream().map(e -> e.getValue("payload")).toList());
    assertTrue(run.err().contains("Too Many Requests"), run.err());
  }

  @Test
  @DisplayName("consume of an unknown consumer exits 1 with NOT_FOUND; a bad --ack or --max is a usage error (exit 2)")
  void consumeRefused() {
    Run unknown = cli("", "consume", "--url", url(), unique("no-such-consumer"));
    assertEquals(1, unknown.exit(), unknown.out());
    assertTrue(unknown.err().contains("NOT_FOUND"), unknown.err());
    assertEquals(2, cli("", "consume", "--url", url(), "--ack", "later", "c").exit());
    Run max = cli("", "consume", "--url", url(), "--max", "1001", "c");
    assertEquals(2, max.exit());
    assertTrue(max.err().contains("--max must be in 0..1000"), max.err());
  }

  @Test
  @DisplayName("tail PATTERN prints what is published from now on through a consumer of its own, deleted when it stops")
  void tail() throws Exception {
    String prefix = unique("cli-tail");
    String other = consumer(new JsonObject(), prefix + "/>");
    http().publish(prefix + "/before", events("before"));
    CompletableFuture<Run> tail = CompletableFuture.supplyAsync(() -> cli("", "tail", "--url", url(), "--count", "2", prefix + "/*/created"));
    await().atMost(Duration.ofSeconds(10)).until(() -> !consumersNamed("tail-").isEmpty());
    http().publish(prefix + "/eu/updated", events("not matched"));
    http().publish(prefix + "/eu/created", events("eu"));
    http().publish(prefix + "/us/created", events("us"));
    Run run = tail.get(30, TimeUnit.SECONDS);
    assertEquals(0, run.exit(), run.err());
    assertEquals(List.of("eu", "us"), run.lines().stream().map(e -> e.getValue("payload")).toList());
    assertEquals(List.of(), consumersNamed("tail-"));
    assertEquals(4, http().metadata(other).json().getLong("backlog"), "the other consumer lost nothing");
  }

  @Test
  @DisplayName("bench: publish -> consume -> ack through a consumer of its own, deleted after; the result counts and times every event")
  void bench() {
    Run run = cli("", "bench", "--url", url(), "--events", "300", "--batch", "20", "--publishers", "2", "--window", "50", "--json");
    assertEquals(0, run.exit(), run.err());
    JsonObject result = new JsonObject(run.out());
    assertEquals(List.of(300L, 300L, 300L, 0L), List.of(result.getLong("confirmed"), result.getLong("delivered"),
        result.getLong("acked"), result.getLong("redelivered")), run.out());
    assertEquals(15, result.getJsonObject("confirmMs").getInteger("samples"), run.out());
    assertEquals(300, result.getJsonObject("deliveryMs").getInteger("samples"), run.out());
    assertTrue(result.getJsonObject("deliveryMs").getDouble("p50") <= result.getJsonObject("deliveryMs").getDouble("p99"), run.out());
    assertEquals(List.of(), consumersNamed("bench-"));

    Run table = cli("", "bench", "--url", url(), "--events", "10");
    assertEquals(0, table.exit(), table.err());
    assertTrue(table.out().lines().anyMatch(line -> line.startsWith("delivery ")), table.out());
    assertEquals(2, cli("", "bench", "--url", url(), "--size", "8").exit());
    assertEquals(3, cli("", "bench", "--url", "http://127.0.0.1:" + RedisProcess.freePort()).exit());
  }

  private static List<String> consumersNamed(String prefix) {
    return http().get("/v1/admin/consumers").json().getJsonArray("consumers").stream()
        .map(c -> ((JsonObject) c).getString("name")).filter(name -> name.startsWith(prefix)).toList();
  }

  @Test
  @DisplayName("--help lists the commands (exit 0); a wrong option is a usage error (exit 2)")
  void help() {
    Run help = cli("", "--help");
    assertEquals(0, help.exit());
    assertTrue(List.of("publish", "consume", "tail", "stats", "bench").stream().allMatch(help.out()::contains) && help.out().contains("make-key"), help.out());
    Run wrong = cli("", "publish", "--no-such-option", "t", "1");
    assertEquals(2, wrong.exit());
    assertTrue(wrong.err().contains("--no-such-option"), wrong.err());
  }
}
