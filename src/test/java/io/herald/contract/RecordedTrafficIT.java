package io.herald.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.herald.testing.Traffic;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * Runs after every other integration test (its own Failsafe execution, see the pom): what they
 * recorded ({@link Traffic}) must agree with the contract. A run of a few tests that recorded no
 * HTTP call or no frame skips that check; the whole suite records tens of thousands of each.
 */
class RecordedTrafficIT {
  private static final Path FOLDER = Path.of(System.getProperty(Traffic.PROPERTY, "target/traffic"));
  private static final Path CONTRACTS = Path.of("src/main/resources/io/herald/contract");

  @Test
  @DisplayName("every request and answer the suite's tests exchanged with nodes validates against openapi.json")
  void httpTrafficValidates() throws Exception {
    List<Traffic.Exchange> exchanges = Traffic.exchanges(FOLDER);
    assumeFalse(exchanges.isEmpty(), "no HTTP traffic recorded in " + FOLDER + " (a run of tests that make none)");
    OpenApiContract contract = new OpenApiContract(Files.readString(CONTRACTS.resolve("openapi.json")));
    Map<String, Integer> problems = new TreeMap<>();
    for (Traffic.Exchange exchange : exchanges) {
      boolean json = exchange.contentType() != null && exchange.contentType().startsWith("application/json");
      count(problems, contract.check(exchange.method(), exchange.path(), exchange.request(), exchange.status(),
          json ? exchange.response() : null));
    }
    assertEquals(Map.of(), problems, exchanges.size() + " exchanges");
  }

  @Test
  @DisplayName("every WebSocket frame the suite's tests got from nodes validates against asyncapi.json")
  void framesValidate() throws Exception {
    List<Traffic.Frame> frames = Traffic.frames(FOLDER);
    assumeFalse(frames.isEmpty(), "no WebSocket frames recorded in " + FOLDER + " (a run of tests that open no socket)");
    AsyncApiContract contract = new AsyncApiContract(Files.readString(CONTRACTS.resolve("asyncapi.json")));
    Map<String, Integer> problems = new TreeMap<>();
    for (Traffic.Frame frame : frames) {
      count(problems, contract.check(frame.channel(), frame.text()));
    }
    assertEquals(Map.of(), problems, frames.size() + " frames");
  }

  /** The same mismatch is reported once, with how often it happened. */
  private static void count(Map<String, Integer> problems, List<String> found) {
    for (String problem : found) {
      problems.merge(problem.length() > 400 ? problem.substring(0, 400) + "…" : problem, 1, Integer::sum);
    }
  }
}
