package io.herald.settings;

/** One bad setting: its full key path and what it must be. */
public record SettingError(String field, String message) {
  @Override
  public String toString() {
    return field + ": " + message;
  }
}
