package io.herald.testing;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** The jar running in a process of its own, its standard output and error gathered as one. */
public final class JarProcess implements AutoCloseable {
  private final Process process;
  private final Thread reader;
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

  /**
   * Starts {@code target/herald.jar} (built by {@code mvn package}, before the integration tests)
   * with {@code --config config} (an empty configuration when null, not the repository's sample)
   * and only these HERALD_ variables.
   */
  public static JarProcess start(Path config, Map<String, String> environment) throws IOException {
    if (config == null) {
      config = Files.createTempFile("herald", ".json");
      Files.writeString(config, "{}");
      config.toFile().deleteOnExit();
    }
    return new JarProcess(config, environment);
  }

  private JarProcess(Path config, Map<String, String> environment) throws IOException {
    List<String> command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
        "-jar", Path.of("target", "herald.jar").toString()));
    command.addAll(List.of("--config", config.toString()));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    // the JVM would announce options it picked up on the output the tests read
    builder.environment().keySet().removeIf(name -> name.startsWith("HERALD_") || name.equals("JAVA_TOOL_OPTIONS")
        || name.equals("JDK_JAVA_OPTIONS") || name.equals("_JAVA_OPTIONS"));
    builder.environment().putAll(environment);
    process = builder.start();
    reader = new Thread(() -> {
      try (InputStream in = process.getInputStream()) {
        byte[] buffer = new byte[8192];
        for (int read; (read = in.read(buffer)) > 0; ) {
          synchronized (bytes) {
            bytes.write(buffer, 0, read);
          }
        }
      } catch (IOException e) {
        // the stream closes with the process: what it wrote was read
      }
    }, "jar-output");
    reader.setDaemon(true);
    reader.start();
  }

  public String output() {
    synchronized (bytes) {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }

  public void awaitOutput(String fragment) {
    await().atMost(Duration.ofSeconds(60)).until(() -> output().contains(fragment) || !process.isAlive());
    assertTrue(output().contains(fragment), output());
  }

  /** Waits for the process to end by itself; answers its exit code. */
  public int exitCode() throws InterruptedException {
    assertTrue(process.waitFor(60, TimeUnit.SECONDS), "still running: " + output());
    reader.join(5000); // the last bytes, read after the exit
    return process.exitValue();
  }

  /** SIGTERM, as a container runtime stops it; waits for the exit and answers all it wrote. */
  public String stop() {
    process.destroy();
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
      reader.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
    return output();
  }

  @Override
  public void close() {
    stop();
  }
}
