package io.herald.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A script of src/test/js run with Node: its exit code and everything it printed. */
public record NodeScript(int exit, String output) {
  /** Where the suite's Node scripts and their packages (.ci/run installs them) are. */
  public static final Path DIR = Path.of("src/test/js");

  /** Runs {@code script} with {@code args} and {@code environment}; kills it (and its children) after {@code timeoutSeconds}. */
  public static NodeScript run(String script, List<String> args, Map<String, String> environment, long timeoutSeconds)
      throws IOException, InterruptedException {
    if (!Files.isDirectory(DIR.resolve("node_modules"))) {
      throw new AssertionError("the Node scripts' packages are missing: run .ci/run, or `npm ci --prefix " + DIR + "`");
    }
    List<String> command = new ArrayList<>(List.of("node", script));
    command.addAll(args);
    ProcessBuilder builder = new ProcessBuilder(command).directory(DIR.toFile()).redirectErrorStream(true);
    builder.environment().putAll(environment);
    Process process = builder.start();
    CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
      try {
        return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "(output not read: " + e + ")";
      }
    });
    if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      // a browser is the script's child
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly().waitFor();
    }
    try {
      return new NodeScript(process.exitValue(), output.get(10, TimeUnit.SECONDS));
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      return new NodeScript(process.exitValue(), "(output not read: " + e + ")");
    }
  }
}
