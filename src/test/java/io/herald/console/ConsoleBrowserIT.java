package io.herald.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.testing.GatewayTest;
import io.herald.testing.NodeConfig;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The console end to end, in headless Chromium driven by Playwright (src/test/browser, whose
 * packages {@code .ci/run} installs with Debian's chromium).
 */
@Timeout(180)
@NodeConfig("""
    {"auth": {"keys": {
      "ops": {"sha256": "9758f3efecca24337f60408a03943767dbe7ed00940442614ec8e1d61a9e6f09", "admin": true,
        "publish": [">"], "consume": ["*"]}}}}""")
class ConsoleBrowserIT extends GatewayTest {
  private static final Path SCRIPTS = Path.of("src/test/browser");
  private static final Path CHROMIUM = Path.of(System.getenv().getOrDefault("CHROMIUM", "/usr/bin/chromium"));

  @Test
  @DisplayName("in Chromium: a consumer's backlog changes on the page without a reload; a dead letter shows why and is redriven from the page")
  void consoleInBrowser() throws Exception {
    assertTrue(Files.isExecutable(CHROMIUM) && Files.isDirectory(SCRIPTS.resolve("node_modules/playwright-core")),
        "the browser test needs " + CHROMIUM + " and Playwright: run .ci/run, or `apt-get install chromium` and "
            + "`npm ci --prefix src/test/browser`");
    String topic = unique("console/browser");
    String consumer = unique("console-browser");
    assertEquals(201, http().withToken(ConsoleIT.ADMIN).putConsumer(consumer, new JsonObject()
        .put("topics", new JsonArray().add(topic)).put("redelivery", new JsonObject().put("maxDeliveries", 1))).status());

    ProcessBuilder builder = new ProcessBuilder("node", "console.test.mjs").directory(SCRIPTS.toFile())
        .redirectErrorStream(true);
    builder.environment().putAll(java.util.Map.of("HERALD_URL", "http://127.0.0.1:" + nodeA.port(),
        "HERALD_TOKEN", ConsoleIT.ADMIN, "HERALD_CONSUMER", consumer, "HERALD_TOPIC", topic,
        "CHROMIUM", CHROMIUM.toString()));
    Process browser = builder.start();
    CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(browser.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "(output not read: " + e + ")";
      }
    });
    if (!browser.waitFor(150, TimeUnit.SECONDS)) {
      // Chromium is the script's child
      browser.descendants().forEach(ProcessHandle::destroyForcibly);
      browser.destroyForcibly().waitFor();
    }
    String log = output.get(10, TimeUnit.SECONDS);
    assertEquals(0, browser.exitValue(), log);
    assertTrue(log.contains("console test passed"), log);
  }
}
