package io.herald.config;

import java.util.List;
import java.util.stream.Collectors;

/** Settings were refused; carries every error found, not just the first. */
public final class InvalidSettingsException extends RuntimeException {
  private final List<SettingError> errors;

  public InvalidSettingsException(List<SettingError> errors) {
    super(errors.stream().map(SettingError::toString).collect(Collectors.joining("; ")));
    this.errors = List.copyOf(errors);
  }

  public List<SettingError> errors() {
    return errors;
  }
}
