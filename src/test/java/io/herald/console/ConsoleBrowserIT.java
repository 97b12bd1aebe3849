package io.herald.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.herald.testing.NodeScript;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The console end to end, in headless Chromium driven by Playwright (src/test/js, whose
 * packages {@code .ci/run} installs with Debian's chromium).
 */
@Timeout(180)
@NodeConfig("""
    {"auth": {"keys": {
      "ops": {"sha256": "9758f3efecca24337f60408a03943767dbe7ed00940442614ec8e1d61a9e6f09", "admin": true,
        "publish": [">"], "consume": ["*"]}}}}""")
class ConsoleBrowserIT extends GatewayTest {
  private static final Path CHROMIUM = Path.of(System.getenv().getOrDefault("CHROMIUM", "/usr/bin/chromium"));

  @Test
  @DisplayName("in Chromium: a consumer's backlog changes on the page without a reload; a dead letter shows why and is redriven from the page")
  void consoleInBrowser() throws Exception {
    assertTrue(Files.isExecutable(CHROMIUM) && Files.isDirectory(NodeScript.DIR.resolve("node_modules/playwright-core")),
        "the browser test needs " + CHROMIUM + " and Playwright: run .ci/run, or `apt-get install chromium` and "
            + "`npm ci --prefix src/test/js`");
    String topic = unique("console/browser");
    String consumer = unique("console-browser");
    assertEquals(201, http().withToken(ConsoleIT.ADMIN).putConsumer(consumer, new JsonObject()
        .put("topics", new JsonArray().add(topic)).put("redelivery", new JsonObject().put("maxDeliveries", 1))).status());

    NodeScript browser = NodeScript.run("console.test.mjs", List.of(), Map.of("HERALD_URL", "http://127.0.0.1:" + nodeA.port(),
        "HERALD_TOKEN", ConsoleIT.ADMIN, "HERALD_CONSUMER", consumer, "HERALD_TOPIC", topic,
        "CHROMIUM", CHROMIUM.toString()), 150);
    String log = browser.output();
    assertEquals(0, browser.exit(), log);
    assertTrue(log.contains("console test passed"), log);
  }
}
