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
 * if any); each test uses fresh names. A class annotated {@link OnTopology} runs on a Sentinel set
 * or a Redis Cluster instead (then {@link #redis} is null: its tests must not read Redis directly).
 */
public abstract class GatewayTest {
  protected static TestRedis redis;
  protected static TestNode nodeA;
  protected static TestNode nodeB;
  private static AutoCloseable topology;
  /** The nodes' herald.json, its redis section naming the topology's servers (but on one server). */
  private static JsonObject nodeTree;

  @BeforeAll
  static void startGateway(TestInfo test) throws Exception {
    Class<?> testClass = test.getTestClass().orElseThrow();
    NodeConfig config = annotation(testClass, NodeConfig.class);
    JsonObject tree = config == null ? new JsonObject() : new JsonObject(config.value());
    OnTopology on = testClass.getAnnotation(OnTopology.class);
    if (on == null) {
      redis = TestRedis.start();
      topology = redis;
      nodeTree = tree;
      nodeA = TestNode.start(redis, tree);
      nodeB = TestNode.start(redis, tree);
      return;
    }
    redis = null;
    JsonObject redisTree = tree.getJsonObject("redis", new JsonObject()).copy();
    if (on.value() == OnTopology.Topology.CLUSTER) {
      TestCluster cluster = TestCluster.start();
      topology = cluster;
      redisTree.put("mode", "cluster").put("endpoints", cluster.endpoints());
    } else {
      TestSentinels sentinels = TestSentinels.start();
      topology = sentinels;
      redisTree.put("mode", "sentinel").put("endpoints", sentinels.endpoints()).put("masterName", TestSentinels.MASTER);
    }
    tree.put("redis", redisTree);
    nodeTree = tree;
    nodeA = TestNode.start(tree);
    nodeB = TestNode.start(tree);
  }

  /** How many long polls of {@code consumer} are parked (its waiters set), on the topology the class runs on. */
  protected static int parkedPolls(String consumer) {
    String key = io.herald.store.Keys.waiters(consumer);
    return send(key, io.vertx.redis.client.Request.cmd(io.vertx.redis.client.Command.ZCARD).arg(key)).toInteger();
  }

  /** Sends {@code request} to the primary that holds {@code key}, on any topology. */
  protected static io.vertx.redis.client.Response send(String key, io.vertx.redis.client.Request request) {
    return RedisCli.send(primaryOf(key), request);
  }

  /** The URL of the primary that holds {@code key}, on any topology. */
  protected static String primaryOf(String key) {
    return topology instanceof TestCluster cluster ? cluster.primaryOf(cluster.slotOf(key))
        : topology instanceof TestSentinels sentinels ? sentinels.primaryUrl() : redis.url();
  }

  /** The class's annotation, or its nearest superclass'. */
  private static <A extends java.lang.annotation.Annotation> A annotation(Class<?> type, Class<A> kind) {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      A found = c.getAnnotation(kind);
      if (found != null) {
        return found;
      }
    }
    return null;
  }

  @AfterAll
  static void stopGateway() throws Exception {
    nodeB.close();
    nodeA.close();
    topology.close();
  }

  /** One more node like nodeA and nodeB, on the same Redis; the test closes it. */
  protected static TestNode startNode() {
    return redis != null ? TestNode.start(redis, nodeTree) : TestNode.start(nodeTree);
  }

  /** As {@link #startNode()}, with {@code settings} merged into its herald.json. */
  protected static TestNode startNode(JsonObject settings) {
    JsonObject tree = nodeTree.copy().mergeIn(settings, true);
    return redis != null ? TestNode.start(redis, tree) : TestNode.start(tree);
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
