package io.herald.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.settings.InvalidSettingsException;
import io.herald.settings.SettingError;
import io.herald.store.RedisTarget;
import io.herald.store.ReplicaWait;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class HeraldConfigTest {

  @Test
  @DisplayName("an empty configuration is a working node with documented defaults")
  void defaults() {
    HeraldConfig config = HeraldConfig.from(new JsonObject());
    assertEquals(8080, config.http().port());
    assertEquals(16L << 20, config.http().maxBodyBytes());
    assertEquals(1L << 20, config.http().maxEventBytes());
    assertEquals(20_000, config.http().drainMs());
    assertNull(config.redis().target());
    assertEquals(Path.of("./data"), config.redis().embedded().dataDir());
    assertTrue(config.consumers().isEmpty());
  }

  @Test
  @DisplayName("every bad key is reported at once, with its path and allowed range")
  void reportsEveryError() {
    JsonObject json = new JsonObject()
        .put("http", new JsonObject().put("port", 70000).put("colour", "blue").put("drainMs", -1))
        .put("redis", new JsonObject().put("url", "http://x"))
        .put("consumers", new JsonObject().put("billing",
            new JsonObject().put("topics", List.of("orders/>")).put("ackTimeoutMs", 10)))
        .put("surprise", true);
    InvalidSettingsException e = assertThrows(InvalidSettingsException.class, () -> HeraldConfig.from(json));
    List<String> fields = e.errors().stream().map(SettingError::field).toList();
    assertEquals(List.of("http.port", "http.drainMs", "http.colour", "redis.url", "consumers.billing.ackTimeoutMs",
        "surprise"), fields);
    assertTrue(e.getMessage().contains("http.port: must be an integer in 0..65535"), e.getMessage());
    assertTrue(e.getMessage().contains("consumers.billing.ackTimeoutMs: must be an integer in 5000..3600000"));
  }

  @Test
  @DisplayName("an integer setting written with a fraction or an exponent is refused, 1e999999 (infinity) included")
  void integersWrittenAsIntegers() {
    for (String number : new String[] {"8e3", "8080.0", "1e999999"}) {
      JsonObject json = new JsonObject("{\"http\": {\"port\": " + number + "}}");
      InvalidSettingsException e = assertThrows(InvalidSettingsException.class, () -> HeraldConfig.from(json), number);
      assertEquals(List.of("http.port"), e.errors().stream().map(SettingError::field).toList(), number);
    }
  }

  @Test
  @DisplayName("consumers declared in the file carry their settings with defaults filled in")
  void declaredConsumers() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("consumers", new JsonObject()
        .put("billing", new JsonObject().put("topics", List.of("orders/*/created")).put("maxUnacked", 20))));
    var billing = config.consumers().get("billing");
    assertEquals(20, billing.maxUnacked());
    assertEquals(30_000, billing.ackTimeoutMs());
    assertTrue(billing.matches("orders/eu/created"));
  }

  @Test
  @DisplayName("HERALD_HTTP_PORT, HERALD_REDIS_URL and HERALD_DATA_DIR override the file")
  void environmentOverrides() {
    JsonObject merged = new JsonObject()
        .put("http", new JsonObject().put("port", 8080))
        .put("HERALD_HTTP_PORT", "9090")
        .put("HERALD_REDIS_URL", "redis://10.0.0.1:6379")
        .put("HERALD_DATA_DIR", "/var/lib/herald");
    HeraldConfig config = HeraldConfig.from(ConfigLoader.applyEnvironment(merged));
    assertEquals(9090, config.http().port());
    assertEquals(RedisTarget.standalone("redis://10.0.0.1:6379"), config.redis().target());
    assertEquals(Path.of("/var/lib/herald"), config.redis().embedded().dataDir());
  }

  @Test
  @DisplayName("a Redis password never shows in the configuration's text")
  void hidesRedisPassword() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("redis",
        new JsonObject().put("url", "redis://user:s3cret@redis:6379")));
    assertTrue(!config.redis().toString().contains("s3cret"), config.redis().toString());
  }

  @Test
  @DisplayName("redis.mode sentinel reads the sentinels from endpoints and the primary's name from masterName")
  void sentinelMode() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("redis", new JsonObject().put("mode", "sentinel")
        .put("endpoints", List.of("redis://10.0.0.1:26379", "redis://10.0.0.2:26379")).put("masterName", "herald")));
    assertEquals(new RedisTarget(RedisTarget.Mode.SENTINEL, List.of("redis://10.0.0.1:26379", "redis://10.0.0.2:26379"),
        "herald"), config.redis().target());
    HeraldConfig single = HeraldConfig.from(new JsonObject().put("redis", new JsonObject()
        .put("endpoints", List.of("redis://10.0.0.1:6379"))));
    assertEquals(RedisTarget.standalone("redis://10.0.0.1:6379"), single.redis().target(), "standalone: one endpoint");
  }

  @Test
  @DisplayName("redis settings that do not fit their mode are refused naming the field")
  void badRedisModes() {
    List<String> sentinel = fields(new JsonObject().put("mode", "sentinel").put("url", "redis://x:1"));
    assertEquals(List.of("redis.endpoints", "redis.masterName", "redis.url"), sentinel);
    assertEquals(List.of("redis.endpoints", "redis.masterName"), fields(new JsonObject().put("mode", "cluster")
        .put("masterName", "m")));
    assertEquals(List.of("redis.masterName", "redis.endpoints"), fields(new JsonObject().put("masterName", "m")
        .put("endpoints", List.of("redis://x:1", "redis://y:1"))));
    assertEquals(List.of("redis.endpoints"), fields(new JsonObject().put("mode", "sentinel")
        .put("endpoints", List.of("x:26379")).put("masterName", "m")));
    assertEquals(List.of("redis.mode"), fields(new JsonObject().put("mode", "replicated")));
    assertEquals(List.of("redis.endpoints"), fields(new JsonObject().put("mode", "sentinel")
        .put("endpoints", List.of("redis://s1:26379", "redis://s2")).put("masterName", "m")));
  }

  @Test
  @DisplayName("redis.mode cluster reads cluster nodes to learn the cluster from (seeds) from endpoints")
  void clusterMode() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("redis", new JsonObject().put("mode", "cluster")
        .put("endpoints", List.of("redis://10.0.0.1:7000", "redis://10.0.0.2:7000"))));
    assertEquals(RedisTarget.cluster(List.of("redis://10.0.0.1:7000", "redis://10.0.0.2:7000")), config.redis().target());
  }

  @Test
  @DisplayName("redis.waitReplicas needs a Redis of one's own and a waitTimeoutMs below half the call timeout")
  void replicaWaits() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("redis", new JsonObject()
        .put("url", "redis://10.0.0.1:6379").put("waitReplicas", 1)));
    assertEquals(new ReplicaWait(1, 1000), config.redis().replicaWait(), "1 s by default");
    assertEquals(ReplicaWait.NONE.replicas(), HeraldConfig.from(new JsonObject()).redis().replicaWait().replicas());
    assertEquals(List.of("redis.waitTimeoutMs"), fields(new JsonObject().put("url", "redis://x:1")
        .put("waitReplicas", 1).put("timeoutMs", 2000).put("waitTimeoutMs", 1000)));
    assertEquals(List.of("redis.waitReplicas"), fields(new JsonObject().put("waitReplicas", 1)));
    assertEquals(List.of("redis.waitReplicas"), fields(new JsonObject().put("url", "redis://x:1").put("waitReplicas", 17)));
  }

  private static List<String> fields(JsonObject redis) {
    InvalidSettingsException e = assertThrows(InvalidSettingsException.class,
        () -> HeraldConfig.from(new JsonObject().put("redis", redis)));
    return e.errors().stream().map(SettingError::field).toList();
  }

  @Test
  @DisplayName("HERALD_REDIS_MODE, HERALD_REDIS_ENDPOINTS (comma-separated) and HERALD_REDIS_MASTER override the file, its url included; HERALD_REDIS_URL overrides its sentinels")
  void sentinelFromEnvironment() {
    JsonObject merged = new JsonObject()
        .put("redis", new JsonObject().put("url", "redis://ignored:1").put("mode", "standalone"))
        .put("HERALD_REDIS_MODE", "sentinel")
        .put("HERALD_REDIS_ENDPOINTS", "redis://s1:26379, redis://s2:26379,redis://s3:26379")
        .put("HERALD_REDIS_MASTER", "7");
    assertEquals(new RedisTarget(RedisTarget.Mode.SENTINEL,
        List.of("redis://s1:26379", "redis://s2:26379", "redis://s3:26379"), "7"),
        HeraldConfig.from(ConfigLoader.applyEnvironment(merged)).redis().target(),
        "the file's url gives way; a master name of digits stays a name");
    JsonObject standalone = new JsonObject()
        .put("redis", new JsonObject().put("mode", "sentinel").put("endpoints", List.of("redis://s1:26379"))
            .put("masterName", "herald"))
        .put("HERALD_REDIS_URL", "redis://10.0.0.1:6379");
    assertEquals(RedisTarget.standalone("redis://10.0.0.1:6379"),
        HeraldConfig.from(ConfigLoader.applyEnvironment(standalone)).redis().target());
  }

  @Test
  @DisplayName("a sentinel's password never shows in the configuration's text")
  void hidesSentinelPasswords() {
    HeraldConfig config = HeraldConfig.from(new JsonObject().put("redis", new JsonObject().put("mode", "sentinel")
        .put("endpoints", List.of("redis://:s3cret@s1:26379")).put("masterName", "herald")));
    assertTrue(!config.redis().toString().contains("s3cret"), config.redis().toString());
  }
}
