package io.herald.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.Map;

/** One read of a node's /metrics, in the Prometheus text format: each sample by its name and labels. */
public final class Scrape {
  private final String text;
  private final Map<String, Double> samples = new LinkedHashMap<>();

  private Scrape(String text) {
    this.text = text;
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
  }

  /** Reads {@code /metrics} through {@code http}. */
  public static Scrape of(Http http) {
    Http.Reply reply = http.get("/metrics");
    assertEquals(200, reply.status(), reply.body());
    return new Scrape(reply.body());
  }

  public String text() {
    return text;
  }

  /**
   * The sample {@code name} whose labels include each of {@code labels} ("key", "value", ...), or
   * 0 when there is none (a counter not touched yet); the sum when several match.
   */
  public double value(String name, String... labels) {
    return samples.entrySet().stream().filter(sample -> matches(sample.getKey(), name, labels))
        .mapToDouble(Map.Entry::getValue).sum();
  }

  /** Whether a sample {@code name} with these labels is there at all. */
  public boolean has(String name, String... labels) {
    return samples.keySet().stream().anyMatch(key -> matches(key, name, labels));
  }

  private static boolean matches(String key, String name, String... labels) {
    if (!(key.equals(name) || key.startsWith(name + "{"))) {
      return false;
    }
    for (int i = 0; i < labels.length; i += 2) {
      if (!key.contains(labels[i] + "=\"" + labels[i + 1] + "\"")) {
        return false;
      }
    }
    return true;
  }
}
