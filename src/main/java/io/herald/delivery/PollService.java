package io.herald.delivery;

import io.herald.consumer.ConsumerSettings;
import io.herald.http.ApiException;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Response;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Hands out batches: one script call per attempt; a long poll parks between attempts until a
 * wake-up (an event published or a delivery due, on any node) or the end of its wait.
 */
public final class PollService {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final System.Logger LOG = System.getLogger(PollService.class.getName());

  private final Vertx vertx;
  private final RedisStore store;
  private final Waiters waiters;
  /** Consumer → the due time this instance last filed with the scheduler (Redis time). */
  private final Map<String, Long> filedDue = new HashMap<>();

  public PollService(Vertx vertx, RedisStore store, Waiters waiters) {
    this.vertx = vertx;
    this.store = store;
    this.waiters = waiters;
  }

  /**
   * @param maxEvents most events wanted (further capped by the consumer's maxPollRecords)
   * @param waitMs    0: answer at once; else wait up to this long for at least one event
   * @param gone      completes when the client went away, ending the wait
   * @return the batch handed out (empty when the wait ended with nothing)
   */
  public Future<Batch> poll(ConsumerSettings consumer, int maxEvents, long waitMs, Future<Void> gone) {
    Poll poll = new Poll(consumer, Math.min(maxEvents, consumer.maxPollRecords()),
        System.nanoTime() + waitMs * 1_000_000);
    gone.onComplete(ignored -> poll.stop());
    poll.attempt();
    return poll.answer.future();
  }

  /** One poll request, through its attempts and parkings. */
  private final class Poll {
    private final ConsumerSettings consumer;
    private final int max;
    private final long giveUpAt;
    private final Promise<Batch> answer = Promise.promise();
    private long timer = -1;
    private Runnable unpark = () -> {};

    Poll(ConsumerSettings consumer, int max, long giveUpAt) {
      this.consumer = consumer;
      this.max = max;
      this.giveUpAt = giveUpAt;
    }

    void attempt() {
      long wakeUpsBefore = waiters.wakeUps(consumer.name());
      long remainingMs = Math.max(0, (giveUpAt - System.nanoTime()) / 1_000_000);
      String batchAckId = HexFormat.of().formatHex(randomBytes());
      List<String> keys = new ArrayList<>(Keys.consumer(consumer.name()));
      keys.add(Keys.batch(consumer.name(), batchAckId));
      store.eval(Script.POLL, keys, List.of(max, remainingMs > 0 ? 1 : 0, remainingMs + 1000))
          .onFailure(failure -> answer.tryFail(ApiException.from(failure, true)))
          .onSuccess(reply -> {
            if (reply.get(0).toInteger() < 0) {
              answer.tryFail(ApiException.unknownConsumer(consumer.name()));
              return;
            }
            int handed = (reply.size() - 4) / 4;
            boolean auto = consumer.ackMode() == ConsumerSettings.AckMode.AUTO;
            if (handed > 0 || remainingMs == 0 || answer.future().isComplete()) {
              long nextDue = reply.get(3).toLong();
              if (handed > 0 && nextDue >= 0) {
                scheduleDue(consumer.name(), nextDue, reply.get(1).toLong());
              }
              answer.tryComplete(encode(reply, handed, auto ? null : batchAckId));
              if (handed == max) {
                // there may be more: pass the wake-up on to the next parked poll
                waiters.wake(consumer.name());
              }
            } else if (waiters.wakeUps(consumer.name()) != wakeUpsBefore) {
              attempt();
            } else {
              park(remainingMs);
            }
          });
    }

    private void park(long remainingMs) {
      timer = vertx.setTimer(remainingMs, t -> {
        unpark.run();
        attempt();
      });
      unpark = waiters.park(consumer.name(), () -> {
        vertx.cancelTimer(timer);
        attempt();
      });
    }

    void stop() {
      vertx.cancelTimer(timer);
      unpark.run();
      answer.tryFail("the client went away");
    }
  }

  /**
   * Makes these deliveries stale at once (their socket closed), so they go to another client after
   * their backoff rather than at their deadlines. Only latest, still pending deliveries move.
   */
  public Future<Void> release(ConsumerSettings consumer, List<String> ackIds) {
    if (ackIds.isEmpty()) {
      return Future.succeededFuture();
    }
    List<Object> args = new ArrayList<>(ackIds.size() + 2);
    args.add(consumer.name());
    args.add(Keys.WAKE_CHANNEL);
    args.addAll(ackIds);
    return store.eval(Script.RELEASE, Keys.consumer(consumer.name()), args).mapEmpty();
  }

  /**
   * Tells the scheduler when the consumer next has timed work, unless a time this instance filed is
   * still ahead and no later: the scheduler only raises an entry after its time has come, so that
   * entry still holds. Saves a round trip on nearly every poll.
   */
  private void scheduleDue(String consumer, long at, long now) {
    Long filed = filedDue.get(consumer);
    if (filed != null && filed > now && filed <= at) {
      return;
    }
    if (filedDue.size() > 10_000) {
      filedDue.clear();
    }
    filedDue.put(consumer, at);
    store.eval(Script.DUE_LOWER, List.of(Keys.DUE, Keys.DUE_VERSIONS), List.of(consumer, at))
        .onFailure(failure -> LOG.log(System.Logger.Level.WARNING,
            "Could not schedule the deadline of consumer " + consumer + ": " + failure.getMessage()));
  }

  /** The protocol's batch body, each event's members spliced in as Redis holds them. */
  private static Batch encode(Response reply, int handed, String batchAckId) {
    List<String> ackIds = new ArrayList<>(handed);
    Buffer json = Buffer.buffer(256 + handed * 512);
    json.appendString("{\"batchAckId\":")
        .appendString(handed > 0 && batchAckId != null ? "\"" + batchAckId + "\"" : "null")
        .appendString(",\"events\":[");
    for (int i = 0; i < handed; i++) {
      int at = 4 + i * 4;
      String ackId = reply.get(at).toString();
      json.appendString(i == 0 ? "{" : ",{");
      if (!ackId.isEmpty()) {
        ackIds.add(ackId);
        json.appendString("\"ackId\":\"").appendString(ackId).appendString("\",");
      }
      json.appendBuffer(reply.get(at + 1).toBuffer())
          .appendString(",\"deliveryCount\":").appendString(reply.get(at + 2).toString());
      if (!ackId.isEmpty()) {
        json.appendString(",\"ackDeadline\":").appendString(reply.get(at + 3).toString());
      }
      json.appendString("}");
    }
    json.appendString("]");
    if (reply.get(2).toInteger() == 1) {
      json.appendString(",\"heldBack\":\"MAX_UNACKED\"");
    }
    json.appendString("}");
    return new Batch(json, handed, ackIds);
  }

  private static byte[] randomBytes() {
    byte[] bytes = new byte[16];
    RANDOM.nextBytes(bytes);
    return bytes;
  }
}
