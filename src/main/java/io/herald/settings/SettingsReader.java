package io.herald.settings;

import io.herald.protocol.JsonLimits;
import io.herald.protocol.TopicName;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads typed, range-checked settings out of a JSON object and collects every problem, each naming
 * its key path and allowed range, so that one pass reports all of them. Keys that nobody read are
 * reported as unknown by {@link #finish()}.
 */
public final class SettingsReader {
  private final JsonObject json;
  private final String path;
  private final List<SettingError> errors;
  private final Set<String> read = new HashSet<>();

  public SettingsReader(JsonObject json) {
    this(json, "", new ArrayList<>());
  }

  private SettingsReader(JsonObject json, String path, List<SettingError> errors) {
    this.json = json == null ? new JsonObject() : json;
    this.path = path;
    this.errors = errors;
  }

  public List<SettingError> errors() {
    return errors;
  }

  /** Fails with every collected error, unknown keys included. */
  public void finish() {
    for (String key : json.fieldNames()) {
      if (!read.contains(key)) {
        errors.add(new SettingError(path + key, "unknown setting"));
      }
    }
  }

  public void failIfErrors() {
    if (!errors.isEmpty()) {
      throw new InvalidSettingsException(errors);
    }
  }

  public SettingsReader section(String key) {
    read.add(key);
    Object value = json.getValue(key);
    if (value != null && !(value instanceof JsonObject)) {
      errors.add(new SettingError(path + key, "must be an object"));
      value = null;
    }
    return new SettingsReader((JsonObject) value, path + key + ".", errors);
  }

  public long integer(String key, long defaultValue, long min, long max) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return defaultValue;
    }
    Long exact = JsonLimits.integerIn(value, min, max);
    if (exact != null) {
      return exact;
    }
    errors.add(new SettingError(path + key, "must be an integer in " + min + ".." + max));
    return defaultValue;
  }

  /** An integer that may be absent or null (then null). */
  public Long optionalInteger(String key, long min, long max) {
    read.add(key);
    return json.getValue(key) == null ? null : integer(key, 0, min, max);
  }

  public double decimal(String key, double defaultValue, double min, double max) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return defaultValue;
    }
    if (value instanceof Number number && number.doubleValue() >= min && number.doubleValue() <= max) {
      return number.doubleValue();
    }
    errors.add(new SettingError(path + key, "must be a number in " + min + ".." + max));
    return defaultValue;
  }

  public String oneOf(String key, String defaultValue, List<String> allowed) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return defaultValue;
    }
    if (value instanceof String text && allowed.contains(text)) {
      return text;
    }
    errors.add(new SettingError(path + key, "must be one of " + String.join(", ", allowed)));
    return defaultValue;
  }

  public boolean bool(String key, boolean defaultValue) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return defaultValue;
    }
    if (value instanceof Boolean flag) {
      return flag;
    }
    errors.add(new SettingError(path + key, "must be true or false"));
    return defaultValue;
  }

  /** A string or null; {@code defaultValue} when absent. */
  public String text(String key, String defaultValue) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return defaultValue;
    }
    if (value instanceof String text && !text.isEmpty()) {
      return text;
    }
    errors.add(new SettingError(path + key, "must be a non-empty string"));
    return defaultValue;
  }

  /** A name of 1..128 characters of A-Z a-z 0-9 . _ - (as consumer names), or null when absent. */
  public String name(String key) {
    String name = text(key, null);
    if (name != null && !TopicName.isValidConsumer(name)) {
      errors.add(new SettingError(path + key, "must be 1..128 characters of A-Z a-z 0-9 . _ -"));
      return null;
    }
    return name;
  }

  /** As {@link #texts(String, int, int)}, {@code defaultValue} when absent. */
  public List<String> texts(String key, int minSize, int maxSize, List<String> defaultValue) {
    if (json.getValue(key) == null) {
      read.add(key);
      return defaultValue;
    }
    return texts(key, minSize, maxSize);
  }

  public List<String> texts(String key, int minSize, int maxSize) {
    read.add(key);
    Object value = json.getValue(key);
    String range = "must be a list of " + minSize + ".." + maxSize + " strings";
    if (!(value instanceof JsonArray array) || array.size() < minSize || array.size() > maxSize) {
      errors.add(new SettingError(path + key, range));
      return List.of();
    }
    List<String> texts = new ArrayList<>();
    for (Object item : array) {
      if (!(item instanceof String text)) {
        errors.add(new SettingError(path + key, range));
        return List.of();
      }
      texts.add(text);
    }
    return texts;
  }

  /** Every member of an object section, for maps keyed by name (e.g. consumers). */
  /** True when {@code key} is present (whatever its value). */
  public boolean has(String key) {
    return json.containsKey(key);
  }

  public Map<String, Object> members(String key) {
    read.add(key);
    Object value = json.getValue(key);
    if (value == null) {
      return Map.of();
    }
    if (!(value instanceof JsonObject object)) {
      errors.add(new SettingError(path + key, "must be an object"));
      return Map.of();
    }
    return object.getMap();
  }

  public void error(String key, String message) {
    errors.add(new SettingError(path + key, message));
  }

  public String path() {
    return path;
  }
}
