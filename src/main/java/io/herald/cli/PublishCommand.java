package io.herald.cli;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code publish TOPIC [PAYLOAD...]}: publishes each argument, or each line of standard input, as
 * one event, in requests of {@code --batch} events; prints one JSON line per event (its index, status,
 * eventId or refusal code). Every event carries an idempotencyKey, so the retries of a request that
 * failed for Redis or the node being unavailable (503) or a lost connection store it once.
 */
@Command(name = "publish", mixinStandardHelpOptions = true,
    description = "Publishes events: each PAYLOAD, or each line of standard input when there is none, is one event's payload "
        + "(JSON; a word that is not JSON is sent as a string). Prints one JSON line per event.",
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:every event confirmed", "1:the request or some events refused", "2:wrong command line",
        "3:the gateway unreachable or unavailable after 3 tries"})
final class PublishCommand implements Callable<Integer> {
  private static final int TRIES = 3;

  @Mixin
  GatewayOptions gateway;

  @Parameters(index = "0", paramLabel = "TOPIC", description = "the topic, its levels separated by '/'")
  String topic;

  @Parameters(index = "1..*", paramLabel = "PAYLOAD", arity = "0..*", description = "payloads (JSON)")
  List<String> payloads = new ArrayList<>();

  @Option(names = "--events", description = "each input is a whole event: {\"payload\":..,\"key\":..,\"headers\":{..},...}")
  boolean whole;

  @Option(names = "--key", paramLabel = "KEY", description = "the key of every event (ordering by key)")
  String key;

  @Option(names = "--batch", paramLabel = "N", defaultValue = "100", description = "events per request, 1..1000 (default ${DEFAULT-VALUE})")
  int batch;

  @Spec
  CommandSpec spec;

  /** Standard input (HeraldCli sets it, so that tests can give their own). */
  InputStream in = System.in;

  @Override
  public Integer call() throws Exception {
    Options.within(spec, "--batch", batch, 1, 1000);
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    GatewayClient client = gateway.client();
    String run = RunId.next();
    Iterator<String> inputs = payloads.isEmpty()
        ? new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)).lines().filter(l -> !l.isBlank()).iterator()
        : payloads.iterator();
    int index = 0;
    boolean refused = false;
    while (inputs.hasNext()) {
      JsonArray events = new JsonArray();
      int first = index;
      while (inputs.hasNext() && events.size() < batch) {
        JsonObject event = event(inputs.next(), index);
        events.add(event.put("idempotencyKey", event.getString("idempotencyKey", "cli-" + run + "-" + index)));
        index++;
      }
      GatewayClient.Answer answer = publish(client, events, err);
      if (answer == null) {
        return ExitCodes.UNAVAILABLE;
      }
      if (!answer.ok()) {
        err.println("publish refused (" + answer.errorCode() + "): " + answer.errorMessage());
        return ExitCodes.REFUSED;
      }
      for (Object r : answer.body().getJsonArray("results")) {
        JsonObject result = (JsonObject) r;
        result.put("index", first + result.getInteger("index"));
        refused |= !"CONFIRMED".equals(result.getString("status"));
        out.println(result.encode());
      }
      out.flush();
    }
    return refused ? ExitCodes.REFUSED : ExitCodes.OK;
  }

  private JsonObject event(String input, int index) {
    Object value;
    try {
      value = Json.decodeValue(input);
    } catch (DecodeException notJson) {
      if (whole) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "event " + index + " is not JSON: " + input);
      }
      value = input;
    }
    JsonObject event;
    if (whole) {
      if (!(value instanceof JsonObject object)) {
        throw new picocli.CommandLine.ParameterException(spec.commandLine(), "event " + index + " is not a JSON object: " + input);
      }
      event = object;
    } else {
      event = new JsonObject().put("payload", value);
    }
    if (key != null) {
      event.put("key", key);
    }
    return event;
  }

  /** The answer, tried again after a 503 or a lost connection; null when the gateway stayed unavailable. */
  private GatewayClient.Answer publish(GatewayClient client, JsonArray events, PrintWriter err) throws InterruptedException {
    // the same events with the same idempotencyKeys: stored once whatever the last try did
    return client.postRetrying("publish", "/v1/topics/" + topic + "/events", new JsonObject().put("events", events), TRIES, err);
  }
}
