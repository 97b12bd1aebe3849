package io.herald.settings;

import io.herald.protocol.ApiException;
import io.herald.protocol.ClientFailure;
import io.herald.protocol.ErrorCode;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.stream.Collectors;

/** Settings were refused; carries every error found, not just the first. */
public final class InvalidSettingsException extends RuntimeException implements ClientFailure {
  private final List<SettingError> errors;

  public InvalidSettingsException(List<SettingError> errors) {
    super(errors.stream().map(SettingError::toString).collect(Collectors.joining("; ")));
    this.errors = List.copyOf(errors);
  }

  public List<SettingError> errors() {
    return errors;
  }

  /** 400 naming the first bad setting, with every one in {@code details.errors}. */
  @Override
  public ApiException toApiException(boolean wrote) {
    JsonArray all = new JsonArray();
    errors.forEach(error -> all.add(new JsonObject().put("field", error.field()).put("message", error.message())));
    return new ApiException(ErrorCode.INVALID_REQUEST, getMessage(),
        new JsonObject().put("field", errors.get(0).field()).put("errors", all));
  }
}
