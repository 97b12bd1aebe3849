package io.herald.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.Http;
import io.herald.testing.NodeScript;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class ContractsIT extends GatewayTest {

  @Test
  @DisplayName("/v1/openapi.json is a valid OpenAPI 3.1 document (swagger-parser), served without credentials")
  void openApiIsValid() {
    Http.Reply served = http().get("/v1/openapi.json");
    assertEquals(200, served.status());
    assertEquals("application/json", served.raw().headers().firstValue("content-type").orElse(""));
    ParseOptions options = new ParseOptions();
    options.setResolve(true);
    SwaggerParseResult parsed = new OpenAPIV3Parser().readContents(served.body(), null, options);
    assertEquals(List.of(), parsed.getMessages());
    assertEquals("3.1.0", parsed.getOpenAPI().getOpenapi());
  }

  @Test
  @DisplayName("/v1/asyncapi.json is a valid AsyncAPI 3 document (the AsyncAPI parser: no error, no warning)")
  void asyncApiIsValid() throws Exception {
    NodeScript validation = NodeScript.run("asyncapi.validate.mjs",
        List.of("http://127.0.0.1:" + nodeA.port() + "/v1/asyncapi.json"), Map.of(), 60);
    assertEquals(0, validation.exit(), validation.output());
    assertTrue(validation.output().contains("asyncapi: valid 3.0.0"), validation.output());
  }

  @Test
  @DisplayName("every route of the router is in openapi.json, and every operation of openapi.json is routed")
  void everyRouteDocumented() throws Exception {
    TreeSet<String> routed = new TreeSet<>();
    for (String route : nodeA.routes()) {
      routed.add(route
          .replaceAll(":([a-zA-Z]+)", "{$1}")
          .replaceAll("\\(\\?<([a-zA-Z]+)>[^)]*\\)", "{$1}")
          // the router gives "/console/*" as its prefix
          .replaceAll("^GET /console/$", "GET /console/{asset}"));
    }
    TreeSet<String> documented = new TreeSet<>();
    new JsonObject(http().get("/v1/openapi.json").body()).getJsonObject("paths").forEach(path ->
        ((JsonObject) path.getValue()).fieldNames().forEach(method ->
            documented.add(method.toUpperCase(Locale.ROOT) + " " + path.getKey())));
    assertEquals(documented, routed);
  }

  @Test
  @DisplayName("requests and answers of every JSON operation, refusals included, validate against openapi.json's schemas")
  void trafficValidates() throws Exception {
    OpenApiContract contract = new OpenApiContract(http().get("/v1/openapi.json").body());
    List<String> problems = new ArrayList<>();
    Exchanges calls = new Exchanges(contract, problems);
    String topic = unique("contract/orders");
    String consumer = unique("contract");

    calls.put("/v1/admin/consumers/" + consumer, new JsonObject().put("topics", new JsonArray().add(topic))
        .put("redelivery", new JsonObject().put("maxDeliveries", 1)));
    calls.put("/v1/admin/consumers/" + consumer, new JsonObject().put("topics", new JsonArray().add(topic))
        .put("redelivery", new JsonObject().put("maxDeliveries", 1)).put("ackTimeoutMs", 60_000));
    calls.get("/v1/admin/consumers/" + consumer);
    calls.get("/v1/admin/consumers");
    calls.put("/v1/admin/topics/" + topic, new JsonObject().put("maxEventBytes", 65_536));
    calls.get("/v1/admin/topics/" + topic);
    calls.get("/v1/admin/topics");

    calls.post("/v1/topics/" + topic + "/events", new JsonObject().put("payload", new JsonObject().put("total", 12.5))
        .put("key", "c-7").put("headers", new JsonObject().put("source", "test")).put("idempotencyKey", "order-1"));
    calls.post("/v1/topics/" + topic + "/events", new JsonObject().put("payload", 1).put("idempotencyKey", "order-1"));
    calls.post("/v1/topics/" + topic + "/events", new JsonObject().put("events", new JsonArray()
        .add(new JsonObject().put("payload", 2).put("correlationId", "x-2"))
        .add(new JsonObject().putNull("payload").put("ttlMs", 60_000))
        .add(new JsonObject().put("payload", "x".repeat(70_000)))
        .add(new JsonObject().put("payload", 4).put("delayMs", 0))));

    JsonObject batch = calls.post("/v1/consumers/" + consumer + "/poll", new JsonObject().put("maxEvents", 2));
    JsonObject single = calls.get("/v1/consumers/" + consumer + "/poll?maxEvents=1&waitMs=0");
    JsonObject last = calls.post("/v1/consumers/" + consumer + "/poll", new JsonObject().put("maxEvents", 10));
    String first = ackId(batch, 0);
    calls.post("/v1/consumers/" + consumer + "/extend", new JsonObject().put("ackIds", new JsonArray().add(first))
        .put("extendMs", 120_000));
    calls.post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("ackIds", new JsonArray().add(first)));
    calls.post("/v1/consumers/" + consumer + "/acks", new JsonObject().put("batchAckIds",
        new JsonArray().add(last.getString("batchAckId"))));
    calls.post("/v1/consumers/" + consumer + "/nacks", new JsonObject().put("ackIds", new JsonArray().add(ackId(batch, 1)))
        .put("action", "REQUEUE").put("reason", "cannot parse"));
    calls.post("/v1/consumers/" + consumer + "/nacks", new JsonObject().put("ackIds", new JsonArray().add(ackId(single, 0)))
        .put("action", "REJECT").put("reason", "refused"));
    calls.get("/v1/consumers/" + consumer + "/metadata");
    calls.get("/v1/consumers/" + consumer + "/events/" + batch.getJsonArray("events").getJsonObject(1).getString("eventId"));

    for (String queue : List.of("dead-letters", "errors")) {
      JsonObject failed = calls.post("/v1/consumers/" + consumer + "/" + queue + "/poll", new JsonObject().put("maxEvents", 10));
      assertEquals(1, failed.getJsonArray("events").size(), queue + ": " + failed);
      String eventId = failed.getJsonArray("events").getJsonObject(0).getString("eventId");
      if (queue.equals("dead-letters")) {
        calls.post("/v1/consumers/" + consumer + "/" + queue + "/redrive", new JsonObject().put("eventIds", new JsonArray().add(eventId)));
      } else {
        calls.post("/v1/consumers/" + consumer + "/" + queue + "/acks", new JsonObject().put("batchAckIds",
            new JsonArray().add(failed.getString("batchAckId"))));
        calls.post("/v1/consumers/" + consumer + "/" + queue + "/redrive", new JsonObject().put("all", true));
      }
    }
    calls.get("/v1/admin/stats");
    calls.get("/health/live");
    calls.get("/health/ready");

    // refusals: the error envelope
    calls.get("/v1/consumers/nobody-" + consumer + "/metadata");
    calls.post("/v1/consumers/" + consumer + "/poll", new JsonObject().put("maxEvents", 0));
    calls.post("/v1/topics/" + topic + "/events", new JsonObject().put("events", new JsonArray()));
    calls.delete("/v1/admin/topics/" + topic);
    calls.delete("/v1/admin/consumers/" + consumer);

    assertEquals(List.of(), problems);
    assertTrue(calls.count() >= 30, calls.count() + " calls");
  }

  private static String ackId(JsonObject batch, int index) {
    return batch.getJsonArray("events").getJsonObject(index).getString("ackId");
  }

  /** Calls of the node's API, each checked against the document as it is made. */
  private static final class Exchanges {
    private final OpenApiContract contract;
    private final List<String> problems;
    private int count;

    Exchanges(OpenApiContract contract, List<String> problems) {
      this.contract = contract;
      this.problems = problems;
    }

    JsonObject get(String path) throws Exception {
      return checked("GET", path, null, http().get(path));
    }

    JsonObject post(String path, JsonObject body) throws Exception {
      return checked("POST", path, body, http().post(path, body));
    }

    JsonObject put(String path, JsonObject body) throws Exception {
      return checked("PUT", path, body, http().put(path, body));
    }

    JsonObject delete(String path) throws Exception {
      return checked("DELETE", path, null, http().delete(path));
    }

    int count() {
      return count;
    }

    private JsonObject checked(String method, String path, JsonObject body, Http.Reply reply) throws Exception {
      count++;
      problems.addAll(contract.check(method, path, body == null ? null : body.encode(), reply.status(), reply.body()));
      return reply.body().startsWith("{") ? new JsonObject(reply.body()) : new JsonObject();
    }
  }
}
