package io.herald.bench;

import io.herald.testing.RedisCli;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Not a test: Redis memory per event in each state of its life with one consumer. Publishes
 * {@code events} events (requests of 100), hands them all out (polls of 1,000), acks them all by
 * batch, and reads Redis' {@code used_memory} before and after each step; then lists what the
 * consumer's keys hold, by kind, with {@code MEMORY USAGE}. Payloads are {@code repeated} (256
 * times 'x', which compresses to almost nothing) or {@code random} (234 random printable
 * characters: what compression cannot shrink much, issue 32's incompressible case).
 *
 * <pre>bench/memory [events=100000] [repeated|random]</pre>
 */
public final class MemoryBenchmark {
  private static final String CONSUMER = "memory";

  public static void main(String[] args) throws Exception {
    int events = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
    boolean random = args.length > 1 && args[1].equals("random");
    Random characters = new Random(32);
    Vertx vertx = Vertx.vertx();
    try (BenchGateway gateway = BenchGateway.start()) {
      HttpClient http = vertx.createHttpClient(new HttpClientOptions().setDefaultHost("127.0.0.1")
          .setDefaultPort(gateway.port()));
      gateway.awaitReady(vertx, http);
      String redis = gateway.redisUrl();
      post(http, HttpMethod.PUT, "/v1/admin/consumers/" + CONSUMER, new JsonObject()
          .put("topics", new JsonArray().add("memory")).put("maxUnacked", 100_000).put("maxPollRecords", 1000)
          .put("ackTimeoutMs", 3_600_000));
      long empty = RedisCli.usedMemory(redis);

      for (int sent = 0; sent < events; sent += 100) {
        JsonArray batch = new JsonArray();
        for (int i = 0; i < Math.min(100, events - sent); i++) {
          String data = random ? randomPrintable(characters, 234) : "x".repeat(256);
          batch.add(new JsonObject().put("payload", new JsonObject().put("data", data)));
        }
        post(http, HttpMethod.POST, "/v1/topics/memory/events", new JsonObject().put("events", batch));
      }
      long spooled = RedisCli.usedMemory(redis);
      JsonObject metadata = get(http, "/v1/consumers/" + CONSUMER + "/metadata");
      long json = metadata.getLong("spooledBytes") / events;

      List<String> batches = new ArrayList<>();
      for (int handed = 0; handed < events; ) {
        JsonObject batch = post(http, HttpMethod.POST, "/v1/consumers/" + CONSUMER + "/poll",
            new JsonObject().put("maxEvents", 1000).put("waitMs", 0));
        handed += batch.getJsonArray("events").size();
        batches.add(batch.getString("batchAckId"));
      }
      long handedOut = RedisCli.usedMemory(redis);

      for (String batchAckId : batches) {
        post(http, HttpMethod.POST, "/v1/consumers/" + CONSUMER + "/acks",
            new JsonObject().put("batchAckIds", new JsonArray().add(batchAckId)));
      }
      long acked = RedisCli.usedMemory(redis);

      System.out.printf("%,d events, stored JSON %d B each; Redis used_memory per event:%n", events, json);
      System.out.printf("  in the backlog: %,d B (JSON + %,d B)%n", (spooled - empty) / events, (spooled - empty) / events - json);
      System.out.printf("  handed out:     %,d B (JSON + %,d B)%n", (handedOut - empty) / events, (handedOut - empty) / events - json);
      System.out.printf("  after the ack:  %,d B%n", (acked - empty) / events);
      System.out.println("what the consumer's keys hold after the acks, by kind (MEMORY USAGE):");
      usageByKind(redis).forEach((kind, bytes) -> System.out.printf("  %-16s %,12d B (%,d B per event)%n",
          kind, bytes, bytes / events));
    }
    System.exit(0);
  }

  /** {@code length} characters of printable ASCII but for '"' and '\\' (which JSON would escape). */
  private static String randomPrintable(Random random, int length) {
    StringBuilder text = new StringBuilder(length);
    while (text.length() < length) {
      char c = (char) (' ' + random.nextInt(95));
      if (c != '"' && c != '\\') {
        text.append(c);
      }
    }
    return text.toString();
  }

  private static JsonObject post(HttpClient http, HttpMethod method, String path, JsonObject body) {
    Buffer reply = http.request(method, path).compose(request -> request.putHeader("content-type", "application/json")
        .send(body.encode()).compose(response -> response.body())).await();
    return reply.length() == 0 ? new JsonObject() : reply.toJsonObject();
  }

  private static JsonObject get(HttpClient http, String path) {
    return http.request(HttpMethod.GET, path).compose(request -> request.send().compose(response -> response.body()))
        .await().toJsonObject();
  }

  /** MEMORY USAGE of every key of the consumer, summed by the kind its name ends with (batch keys as one kind). */
  private static Map<String, Long> usageByKind(String redis) {
    Map<String, Long> kinds = new TreeMap<>();
    String cursor = "0";
    do {
      Response page = RedisCli.send(redis, Request.cmd(Command.SCAN).arg(cursor).arg("MATCH")
          .arg("herald:{c:" + CONSUMER + "}:*").arg("COUNT").arg(1000));
      cursor = page.get(0).toString();
      for (Response key : page.get(1)) {
        String name = key.toString();
        String rest = name.substring(("herald:{c:" + CONSUMER + "}:").length());
        String kind = rest.contains(":") ? rest.substring(0, rest.indexOf(':')) : rest;
        Response usage = RedisCli.send(redis, Request.cmd(Command.MEMORY).arg("USAGE").arg(name).arg("SAMPLES").arg(0));
        kinds.merge(kind, usage == null ? 0 : usage.toLong(), Long::sum);
      }
    } while (!cursor.equals("0"));
    return kinds;
  }
}
