package io.herald.testing;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;

/**
 * One real Redis and two gateway nodes on it for a test class (configured by its {@link NodeConfig},
 * if any); each test uses fresh names.
 */
public abstract class GatewayTest {
  protected static TestRedis redis;
  protected static TestNode nodeA;
  protected static TestNode nodeB;

  @BeforeAll
  static void startGateway(TestInfo test) {
    NodeConfig config = test.getTestClass().map(c -> c.getAnnotation(NodeConfig.class)).orElse(null);
    JsonObject tree = config == null ? new JsonObject() : new JsonObject(config.value());
    redis = TestRedis.start();
    nodeA = TestNode.start(redis, tree);
    nodeB = TestNode.start(redis, tree);
  }

  @AfterAll
  static void stopGateway() {
    nodeB.close();
    nodeA.close();
    redis.close();
  }

  protected static Http http() {
    return nodeA.http();
  }

  protected static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Creates a consumer of {@code topics} with {@code settings} on top; returns its name. */
  protected static String consumer(JsonObject settings, String... topics) {
    String name = unique("c");
    Http.Reply reply = http().putConsumer(name, settings.copy().put("topics", new JsonArray(List.of(topics))));
    if (reply.status() != 201) {
      throw new AssertionError("consumer not created: " + reply.body());
    }
    return name;
  }

  protected static JsonObject event(Object payload) {
    return new JsonObject().put("payload", payload);
  }

  protected static JsonObject events(Object... payloads) {
    JsonArray events = new JsonArray();
    for (Object payload : payloads) {
      events.add(event(payload));
    }
    return new JsonObject().put("events", events);
  }

  protected static JsonObject max(int maxEvents) {
    return new JsonObject().put("maxEvents", maxEvents);
  }
}
