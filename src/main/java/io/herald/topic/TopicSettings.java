package io.herald.topic;

import io.herald.settings.SettingsReader;
import io.vertx.core.json.JsonObject;

/**
 * A topic's settings (protocol.md, "Administration"). A topic needs none to be published to: one
 * never configured has {@link #defaults}.
 *
 * @param maxEventBytes largest event on this topic, or null for the gateway's limit (a larger
 *                      value than the gateway's has no effect: the smaller limit wins)
 * @param quotaBytes    most spooled bytes of this topic's events held (over all consumers), or null
 * @param enabled       false: shut down, every publish to it is refused with TOPIC_DISABLED
 * @param namespace     the tenant the topic belongs to, or null: stored and shown for grouping; spool
 *                      counts against the namespace of the consumer that holds it, not the topic's
 */
public record TopicSettings(String name, Long maxEventBytes, Long quotaBytes, boolean enabled, String namespace) {

  public static TopicSettings defaults(String name) {
    return new TopicSettings(name, null, null, true, null);
  }

  /** Reads settings, reporting every bad field through {@code reader}'s errors. */
  public static TopicSettings read(String name, SettingsReader reader) {
    TopicSettings settings = new TopicSettings(name,
        reader.optionalInteger("maxEventBytes", 1, 64L << 20),
        reader.optionalInteger("quotaBytes", 1, Long.MAX_VALUE),
        reader.bool("enabled", true),
        reader.name("namespace"));
    reader.finish();
    return settings;
  }

  /** Parses settings sent by a client or stored in Redis; throws with every bad field. */
  public static TopicSettings parse(String name, JsonObject json) {
    SettingsReader reader = new SettingsReader(json);
    TopicSettings settings = read(name, reader);
    reader.failIfErrors();
    return settings;
  }

  /** The event size limit on this topic, given the gateway's. */
  public long maxEventBytes(long gatewayLimit) {
    return maxEventBytes == null ? gatewayLimit : Math.min(gatewayLimit, maxEventBytes);
  }

  /** Every setting, defaults included: what GET returns and what Redis stores. */
  public JsonObject toJson() {
    return new JsonObject()
        .put("maxEventBytes", maxEventBytes)
        .put("quotaBytes", quotaBytes)
        .put("enabled", enabled)
        .put("namespace", namespace);
  }
}
