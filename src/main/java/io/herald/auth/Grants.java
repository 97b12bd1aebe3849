package io.herald.auth;

import io.herald.settings.SettingsReader;
import io.herald.topic.TopicPattern;
import java.util.ArrayList;
import java.util.List;

/**
 * What a credential allows: publishing to topics matching {@code publish}, consuming from the
 * consumers matching {@code consume} (names, {@code billing-*}, {@code *}), administering if
 * {@code admin}. API keys carry them in the configuration, JWTs in a claim; both read the same shape.
 */
public record Grants(List<TopicPattern> publish, List<ConsumerPattern> consume, boolean admin) {

  /** Reads {@code publish}, {@code consume} and {@code admin} (all optional: nothing is granted by default). */
  public static Grants read(SettingsReader reader) {
    List<TopicPattern> publish = new ArrayList<>();
    for (String pattern : reader.texts("publish", 0, 100, List.of())) {
      try {
        publish.add(TopicPattern.parse(pattern));
      } catch (IllegalArgumentException e) {
        reader.error("publish", "'" + pattern + "': " + e.getMessage());
      }
    }
    List<ConsumerPattern> consume = new ArrayList<>();
    for (String grant : reader.texts("consume", 0, 1000, List.of())) {
      try {
        consume.add(ConsumerPattern.parse(grant));
      } catch (IllegalArgumentException e) {
        reader.error("consume", "'" + grant + "': " + e.getMessage());
      }
    }
    boolean admin = reader.bool("admin", false);
    return new Grants(List.copyOf(publish), List.copyOf(consume), admin);
  }
}
