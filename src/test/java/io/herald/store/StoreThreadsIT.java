package io.herald.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.herald.testing.TestCluster;
import io.herald.testing.TestRedis;
import io.vertx.core.Context;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The threads a store's answers come on. */
@Timeout(60)
class StoreThreadsIT {
  /** The thread {@code context} runs on, and the one the answer to a GET sent from it came on. */
  private static Thread[] getFrom(Context context, RedisStore store) throws Exception {
    CompletableFuture<Thread[]> threads = new CompletableFuture<>();
    context.runOnContext(v -> {
      Thread caller = Thread.currentThread();
      store.send(Request.cmd(Command.GET).arg("threads")).onComplete(done ->
          threads.complete(new Thread[] {caller, Thread.currentThread()}));
    });
    return threads.get(10, TimeUnit.SECONDS);
  }

  @Test
  @DisplayName("a call answers on its caller's event loop, also when another loop opened the connection to that primary")
  void answersOnTheCallersThread() throws Exception {
    try (TestCluster cluster = TestCluster.start()) {
      assertAnswersOnCallersThread(RedisTarget.cluster(cluster.endpoints().stream().map(Object::toString).toList()));
    }
  }

  @Test
  @DisplayName("so on one server")
  void answersOnTheCallersThreadOnOneServer() throws Exception {
    try (TestRedis redis = TestRedis.start()) {
      assertAnswersOnCallersThread(RedisTarget.standalone(redis.url()));
    }
  }

  private static void assertAnswersOnCallersThread(RedisTarget target) throws Exception {
    Vertx vertx = Vertx.vertx();
    try {
      RedisStore store = RedisStore.pipelined(vertx, target, 5000);
      // two verticle instances are on two event loops
      List<Context> contexts = new CopyOnWriteArrayList<>();
      vertx.deployVerticle(() -> new VerticleBase() {
        @Override
        public Future<?> start() {
          contexts.add(context);
          return Future.succeededFuture();
        }
      }, new DeploymentOptions().setInstances(2)).await();
      Context opener = contexts.get(0);
      Context other = contexts.get(1);
      Thread[] first = getFrom(opener, store);
      Thread[] second = getFrom(other, store);
      assertNotEquals(first[0], second[0], "the two contexts share a loop");
      assertEquals(first[0], first[1]);
      assertEquals(second[0], second[1]);
      store.close().await();
    } finally {
      vertx.close().await();
    }
  }
}
