package io.herald.config;

import io.vertx.config.ConfigRetriever;
import io.vertx.config.ConfigRetrieverOptions;
import io.vertx.config.ConfigStoreOptions;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Reads the configuration file through vertx-config and lays the supported environment variables
 * over it, so that addresses and secrets can come from the environment.
 */
public final class ConfigLoader {
  public static final Path DEFAULT_FILE = Path.of("conf", "herald.json");

  /** Environment variable → the configuration key path it overrides. */
  private static final Map<String, String> ENVIRONMENT = Map.of(
      "HERALD_HTTP_PORT", "http.port",
      "HERALD_REDIS_URL", "redis.url",
      "HERALD_REDIS_MODE", "redis.mode",
      "HERALD_REDIS_ENDPOINTS", "redis.endpoints",
      "HERALD_REDIS_MASTER", "redis.masterName",
      "HERALD_DATA_DIR", "redis.embedded.dataDir");
  /** Variables that hold comma-separated lists. */
  private static final String LISTS = "HERALD_REDIS_ENDPOINTS";
  /** Variables that hold numbers (the others are text, whatever they look like). */
  private static final String NUMBERS = "HERALD_HTTP_PORT";
  private static final List<String> SENTINEL_VARIABLES = List.of("HERALD_REDIS_MODE", "HERALD_REDIS_ENDPOINTS",
      "HERALD_REDIS_MASTER");

  private ConfigLoader() {}

  /**
   * Loads {@code file}; when it is the default file and absent, starts from defaults so a bare
   * {@code java -jar} works anywhere.
   */
  public static Future<HeraldConfig> load(Vertx vertx, Path file) {
    ConfigRetrieverOptions options = new ConfigRetrieverOptions().setScanPeriod(0);
    if (Files.exists(file) || !file.equals(DEFAULT_FILE)) {
      options.addStore(new ConfigStoreOptions().setType("file").setFormat("json").setOptional(false)
          .setConfig(new JsonObject().put("path", file.toString())));
    }
    options.addStore(new ConfigStoreOptions().setType("env")
        .setConfig(new JsonObject().put("keys", new JsonArray(ENVIRONMENT.keySet().stream().toList()))
            .put("raw-data", true)));
    ConfigRetriever retriever = ConfigRetriever.create(vertx, options);
    return retriever.getConfig()
        .eventually(retriever::close)
        .map(ConfigLoader::applyEnvironment)
        .map(HeraldConfig::from);
  }

  static JsonObject applyEnvironment(JsonObject merged) {
    JsonObject config = merged.copy();
    // an environment that names sentinels replaces the file's standalone server (and the other way round)
    JsonObject fileRedis = config.getJsonObject("redis");
    if (fileRedis != null) {
      if (SENTINEL_VARIABLES.stream().anyMatch(config::containsKey)) {
        fileRedis.remove("url");
      }
      if (config.containsKey("HERALD_REDIS_URL")) {
        fileRedis.remove("mode");
        fileRedis.remove("endpoints");
        fileRedis.remove("masterName");
      }
    }
    ENVIRONMENT.forEach((variable, path) -> {
      Object value = config.remove(variable);
      if (value != null) {
        String[] keys = path.split("\\.");
        JsonObject section = config;
        for (int i = 0; i < keys.length - 1; i++) {
          if (!(section.getValue(keys[i]) instanceof JsonObject)) {
            section.put(keys[i], new JsonObject());
          }
          section = section.getJsonObject(keys[i]);
        }
        section.put(keys[keys.length - 1], variable.equals(LISTS)
            ? new JsonArray(Arrays.stream(value.toString().split(",")).map(String::trim).filter(v -> !v.isEmpty()).toList())
            : variable.equals(NUMBERS) ? typed(value.toString()) : value.toString());
      }
    });
    return config;
  }

  private static Object typed(String value) {
    try {
      return Long.parseLong(value);
    } catch (NumberFormatException e) {
      return value;
    }
  }
}
