package io.herald.delivery;

import io.herald.ack.AckIds;
import io.herald.ack.ConsumerSalts;
import io.herald.consumer.ConsumerSettings;
import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.lifecycle.Drain;
import io.herald.metrics.HeraldMetrics;
import io.herald.copy.Copies;
import io.herald.copy.Stubs;
import io.herald.publish.EventIds;
import io.herald.quota.HoldSettler;
import io.herald.quota.SpoolFigures;
import io.herald.quota.SpoolLedger;
import io.herald.redelivery.DueTimes;
import io.herald.store.Keys;
import io.herald.store.RedisStore;
import io.herald.store.Script;
import io.vertx.core.AsyncResult;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Hands out batches: one script call per attempt; a long poll parks between attempts until a
 * wake-up (events published, acked or due, on any node: Redis wakes one parked poll of the
 * consumer, see {@link Waiters}) or the end of its wait.
 */
public final class PollService {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final System.Logger LOG = System.getLogger(PollService.class.getName());
  /** How soon a long poll held back by maxUnackedTotal asks again, whatever wakes it meanwhile. */
  static final long ROOM_RECHECK_MS = 1000;
  /**
   * Where the poll script's answer lists the first event (after status, time, heldBack, nextDue,
   * figures count, salt and deadline); each event takes 4 entries: eventId, seq, deliveryCount, blob.
   */
  private static final int FIRST_EVENT = 8;
  /** Where the poll's answer names the copies it let go of (poll.lua). */
  private static final int LET_GO = 7;
  /** The poll script's heldBack codes (1..3) as the batch says them. */
  private static final String[] HELD_BACK = {"", ",\"heldBack\":\"MAX_UNACKED\"",
      ",\"heldBack\":\"MAX_UNACKED_TOTAL\"", ",\"heldBack\":\"ORDERING\""};

  private final Vertx vertx;
  private final RedisStore store;
  private final Waiters waiters;
  private final FullWindows windows;
  private final DueTimes dueTimes;
  private final SpoolLedger ledger;
  private final HoldSettler settler;
  private final ConsumerSalts salts;
  /** This node's id, as its wake-up channel and the events' history name it. */
  private final String node;
  private final Drain drain;
  private final Copies copies;
  private final HeraldMetrics metrics;

  /**
   * @param ledger       gives room under maxUnackedTotal, when one is configured
   * @param settler      gives that room back
   * @param salts        where the consumers' salts the poll script tells are kept, for ackIds
   * @param waiterPrefix "node/instance": the wake-up address of this instance's polls
   * @param drain        refuses new polls once the node drains, and waits for those under way
   * @param metrics      counts deliveries, redeliveries and their lag
   */
  public PollService(Vertx vertx, RedisStore store, DueTimes dueTimes, SpoolLedger ledger, HoldSettler settler,
      ConsumerSalts salts, String waiterPrefix, Drain drain, HeraldMetrics metrics, Copies copies) {
    this.drain = drain;
    this.copies = copies;
    this.metrics = metrics;
    this.salts = salts;
    this.vertx = vertx;
    this.store = store;
    this.dueTimes = dueTimes;
    this.ledger = ledger;
    this.settler = settler;
    this.waiters = new Waiters(waiterPrefix, this::passOn);
    this.windows = new FullWindows(waiterPrefix);
    this.node = waiterPrefix.substring(0, waiterPrefix.indexOf('/'));
  }

  /** Handles a wake-up from Redis: "waiterId consumer", or a settlement told to full windows. */
  public void wake(String message) {
    if (!windows.told(message)) {
      waiters.wake(message);
    }
  }

  /** The full push windows of this instance's sockets. */
  public FullWindows windows() {
    return windows;
  }

  /** Wakes every long poll of this instance: wake-ups may have been missed. */
  public void wakeAll() {
    waiters.wakeAll();
  }

  /** A wake-up came for a poll that is gone: another poll of the consumer gets it. */
  private void passOn(String consumer) {
    store.eval(Script.WAKE_NEXT, Keys.consumer(consumer), List.of())
        .onFailure(failure -> LOG.log(System.Logger.Level.WARNING,
            "Could not pass a wake-up of consumer " + consumer + " on: " + failure.getMessage()));
  }

  /**
   * Starts a poll; {@link Poll#stop() stop} it when the client goes away. (A handle rather than a
   * "gone" future: a listener on a future that outlives many polls, such as a socket's, would keep
   * every poll and its batch reachable for as long as the socket lives.)
   *
   * @param maxEvents most events wanted (further capped by the consumer's maxPollRecords)
   * @param waitMs    0: answer at once; else wait up to this long for at least one event
   * @param counted   a client's poll request, which counts against the consumer's rate limit (a
   *                  socket's push fetches do not)
   * @param via       how the events go out ("http" or "ws"), for their history
   */
  public Poll poll(ConsumerSettings consumer, int maxEvents, long waitMs, boolean counted, String via) {
    boolean refused = drain.draining();
    Poll poll = new Poll(consumer, Math.min(maxEvents, consumer.maxPollRecords()),
        System.nanoTime() + waitMs * 1_000_000, waitMs > 0 && !refused, counted, via);
    if (refused) {
      poll.finish(Future.failedFuture(Drain.refusal()));
      return poll;
    }
    // the drain waits for it (and ends its wait: see run)
    drain.count();
    poll.answer().onComplete(done -> drain.leave());
    try {
      poll.attempt();
    } catch (RuntimeException e) {
      poll.finish(Future.failedFuture(e)); // answered, so the drain does not wait for it
    }
    return poll;
  }

  /** One poll request, through its attempts and parkings. */
  public final class Poll {
    private final ConsumerSettings consumer;
    private final int max;
    private final long giveUpAt;
    private final Promise<Batch> answer = Promise.promise();
    /** Only long polls wait for wake-ups. */
    private final Waiters.Waiter waiter;
    /** "http" or "ws"; and "node via", noted with each hand-out in the event's history. */
    private final String via;
    private final String recipient;
    /** Whether the next attempt counts against the rate limit: only a counted poll's first. */
    private boolean countNext;
    private long timer = -1;

    Poll(ConsumerSettings consumer, int max, long giveUpAt, boolean waits, boolean counted, String via) {
      this.via = via;
      this.recipient = node + " " + via;
      this.consumer = consumer;
      this.max = max;
      this.giveUpAt = giveUpAt;
      this.waiter = waits ? waiters.open() : null;
      this.countNext = counted;
    }

    /**
     * The batch handed out (empty when the wait ended with nothing); fails with TOO_MANY_REQUESTS
     * while the consumer is blocked by its rate limit.
     */
    public Future<Batch> answer() {
      return answer.future();
    }

    private void attempt() {
      if (!countsAgainstTotal()) {
        run(null, "");
        return;
      }
      byte[] hold = new byte[12];
      RANDOM.nextBytes(hold);
      String holdId = HexFormat.of().formatHex(hold) + ":" + consumer.name();
      ledger.takeUnacked(store, consumer.name(), holdId, max)
          .onFailure(failure -> finish(Future.failedFuture(ApiException.from(failure, false))))
          .onSuccess(room -> {
            if (answer.future().isComplete()) {
              settler.settle(List.of(holdId), List.of()); // stopped meanwhile: the room goes back
            } else {
              run(holdId, room);
            }
          });
    }

    /** Whether the events it hands out count against maxUnackedTotal (then the ledger gives room first). */
    private boolean countsAgainstTotal() {
      return ledger.quotas().maxUnackedTotal() != null && consumer.ackMode() == ConsumerSettings.AckMode.EXPLICIT
          && !consumer.systemOnly();
    }

    /**
     * One attempt of the poll script; {@code room}: most events it may make unacked ('' for no
     * gateway-wide limit), held in the ledger under {@code holdId} until settled.
     */
    private void run(String holdId, Object room) {
      // a draining node answers parked polls at once (it wakes them all)
      long remainingMs = drain.draining() ? 0 : Math.max(0, (giveUpAt - System.nanoTime()) / 1_000_000);
      String batchAckId = HexFormat.of().formatHex(randomBytes(16));
      List<String> keys = new ArrayList<>(Keys.consumer(consumer.name()));
      keys.add(Keys.batch(consumer.name(), batchAckId));
      if (waiter != null) {
        waiter.attempting();
      }
      String countedAs = countNext ? batchAckId : "";
      countNext = false;
      // tells these deliveries from every other delivery of their events (see ack_id in consumer.lib.lua)
      String mark = HexFormat.of().formatHex(randomBytes(8));
      Future<Response> call = store.eval(Script.POLL, keys, List.of(max, waiter == null ? "" : waiter.id(), remainingMs,
          countedAs, recipient, room, holdId == null ? "" : holdId, mark, consumer.maxBatchBytes(),
          copies.shortBatches() ? "S" : ""));
      call.onFailure(failure -> finish(Future.failedFuture(ApiException.from(failure, true))))
          .onSuccess(reply -> {
            int status = reply.get(0).toInteger();
            if (status < 0) {
              finish(Future.failedFuture(switch (status) {
                case -2 -> ApiException.tooManyRequests(reply.get(1).toLong());
                case -3 -> ApiException.consumerDisabled(consumer.name());
                default -> ApiException.unknownConsumer(consumer.name());
              }));
              return;
            }
            int handed = (reply.size() - FIRST_EVENT - reply.get(4).toInteger()) / 4;
            if (handed > 0 || remainingMs == 0 || answer.future().isComplete()) {
              long nextDue = reply.get(3).toLong();
              if (nextDue >= 0) {
                dueTimes.file(consumer.name(), nextDue);
              }
              String salt = reply.get(5).toString();
              salts.heard(consumer.name(), salt);
              // the script's mode, not this node's copy of it, tells whether they need acks
              boolean auto = reply.get(6).toString().isEmpty();
              blobs(reply, handed).onComplete(read -> {
                answer(reply, handed, read, auto ? null : batchAckId, salt, mark);
                // only now: an event it let go of at hand-out (auto ack) was read from its copy
                copies.releaseAnswered(store, consumer.name(), reply.get(LET_GO), 0);
              });
              return;
            }
            copies.releaseAnswered(store, consumer.name(), reply.get(LET_GO), 0);
            if (reply.get(2).toInteger() == 2) {
              // held back by maxUnackedTotal: the ledger tells of room once, and that may come
              // between this attempt and its parking, so a held-back poll also asks again soon
              park(Math.min(remainingMs, ROOM_RECHECK_MS));
            } else {
              park(remainingMs);
            }
          })
          .onComplete(done -> {
            if (holdId != null) {
              // after the answer: the consumer's figures at its end replace the room held
              settler.settle(List.of(holdId), figures(done));
            }
          });
    }

    /**
     * Answers with the batch of the events handed out, their blobs read ({@code read}); when the
     * copies could not be read, the deliveries go out again after their backoff.
     */
    private void answer(Response reply, int handed, AsyncResult<List<Buffer>> read, String batchAckId, String salt,
        String mark) {
      if (read.failed()) {
        Batch unread = encode(reply, java.util.Collections.nCopies(handed, Buffer.buffer()), batchAckId, salt, mark);
        release(consumer, unread.ackIds());
        finish(Future.failedFuture(ApiException.from(read.cause(), true)));
        return;
      }
      Batch batch = encode(reply, read.result(), batchAckId, salt, mark);
      if (answer.future().isComplete()) {
        // the client went away while this attempt ran: what it handed out reached no one,
        // and goes out again after its backoff rather than at its deadline
        release(consumer, batch.ackIds()).onFailure(failure -> LOG.log(System.Logger.Level.WARNING,
            "Deliveries of a poll whose client went away wait for their deadline: " + failure.getMessage()));
      } else {
        finish(Future.succeededFuture(batch));
        measure(reply, handed);
      }
    }

    /**
     * The blobs of the events handed out, in order: as Redis held them (inline), or read from their
     * copies (docs/internals.md); an event whose copy is gone is dropped (lost_copy.lua), its blob null.
     */
    private Future<List<Buffer>> blobs(Response reply, int handed) {
      List<String> copyIds = new ArrayList<>();
      for (int i = 0; i < handed; i++) {
        String copyId = Stubs.copyOf(reply.get(FIRST_EVENT + i * 4).toString(), reply.get(FIRST_EVENT + i * 4 + 3));
        if (copyId != null) {
          copyIds.add(copyId);
        }
      }
      if (copyIds.isEmpty()) {
        List<Buffer> inline = new ArrayList<>(handed);
        for (int i = 0; i < handed; i++) {
          inline.add(reply.get(FIRST_EVENT + i * 4 + 3).toBuffer());
        }
        return Future.succeededFuture(inline);
      }
      return copies.read(store, copyIds).map(found -> {
        List<Buffer> blobs = new ArrayList<>(handed);
        List<String> lost = new ArrayList<>();
        for (int i = 0; i < handed; i++) {
          String eventId = reply.get(FIRST_EVENT + i * 4).toString();
          Response value = reply.get(FIRST_EVENT + i * 4 + 3);
          String copyId = Stubs.copyOf(eventId, value);
          Buffer blob = copyId == null ? value.toBuffer() : Stubs.blob(found.get(copyId), eventId);
          if (blob == null) {
            lost.add(eventId);
          }
          blobs.add(blob);
        }
        if (!lost.isEmpty()) {
          dropLost(consumer, lost);
        }
        return blobs;
      });
    }

    /** Counts a batch handed out: its redeliveries, and of first deliveries the time since their publish. */
    private void measure(Response reply, int handed) {
      if (handed == 0) {
        return;
      }
      long now = reply.get(1).toLong();
      int again = 0;
      for (int i = 0; i < handed; i++) {
        int at = FIRST_EVENT + i * 4;
        if (reply.get(at + 2).toLong() == 1) {
          metrics.firstHandOut(now - EventIds.publishedAt(reply.get(at).toString()));
        } else {
          again++;
        }
      }
      metrics.delivered(via, handed, again);
    }

    /** The consumer's figures at the end of a poll's answer; none when the poll did not run. */
    private List<SpoolFigures> figures(AsyncResult<Response> done) {
      if (done.failed() || done.result().get(0).toInteger() < 0) {
        return List.of();
      }
      Response reply = done.result();
      int figures = reply.get(4).toInteger();
      return List.of(SpoolFigures.parse(consumer.name(), consumer, reply, reply.size() - figures));
    }

    private void park(long remainingMs) {
      timer = vertx.setTimer(remainingMs, t -> {
        waiter.unpark();
        attempt();
      });
      waiter.park(() -> {
        vertx.cancelTimer(timer);
        attempt();
      });
    }

    private void finish(Future<Batch> outcome) {
      if (waiter != null) {
        waiter.close();
      }
      if (outcome.succeeded()) {
        answer.tryComplete(outcome.result());
      } else {
        answer.tryFail(outcome.cause());
      }
    }

    /** The client went away: a parked poll stops waiting, and the answer fails. */
    public void stop() {
      if (answer.future().isComplete()) {
        return;
      }
      vertx.cancelTimer(timer);
      // told to no one (the client is gone); an attempt on its way may still hand out (see run)
      finish(Future.failedFuture(new ApiException(ErrorCode.OUTCOME_UNKNOWN, "The client went away")));
      if (waiter != null) {
        // sent on the connection of any attempt still on its way, so it runs after it
        store.send(Request.cmd(Command.ZREM).arg(Keys.waiters(consumer.name())).arg(waiter.id()));
      }
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
    return store.eval(Script.RELEASE, Keys.consumer(consumer.name()), ackIds).map(reply -> {
      // their backoff may end before the time filed for the consumer's deadlines
      if (reply.type() == io.vertx.redis.client.ResponseType.MULTI) {
        dueTimes.file(consumer.name(), reply.get(1).toLong());
      }
      return null;
    });
  }

  /**
   * Drops deliveries whose stored copy is gone (a failover without redis.waitReplicas lost it, or it
   * expired): nothing can deliver them, and they would come back forever.
   */
  private void dropLost(ConsumerSettings consumer, List<String> eventIds) {
    LOG.log(System.Logger.Level.ERROR, "The stored copies of " + eventIds.size() + " events of consumer '"
        + consumer.name() + "' are gone; they are dropped: " + eventIds);
    store.eval(Script.LOST_COPY, Keys.consumer(consumer.name()), eventIds)
        .onSuccess(letGo -> copies.releaseAnswered(store, consumer.name(), letGo, 0)).onFailure(failure -> LOG.log(
        System.Logger.Level.WARNING, "Could not drop events whose copies are gone: " + failure.getMessage()));
  }

  /**
   * Those of {@code ackIds} whose deliveries are still out: their event's latest, handed out and
   * not settled by any path (acked or nacked over HTTP or another socket, handed out again). Asked
   * by a full window: its instance is told of settlements by other paths for {@code tellMs} (see
   * {@link FullWindows}).
   */
  public Future<List<String>> stillOut(ConsumerSettings consumer, List<String> ackIds, long tellMs) {
    List<Object> args = new ArrayList<>(ackIds.size() + 2);
    args.add(windows.id());
    args.add(tellMs);
    args.addAll(ackIds);
    return store.eval(Script.STILL_OUT, Keys.consumer(consumer.name()), args).map(reply -> {
      List<String> out = new ArrayList<>();
      for (int i = 0; i < ackIds.size() && reply.size() > i; i++) {
        if (reply.get(i).toInteger() == 1) {
          out.add(ackIds.get(i));
        }
      }
      return out;
    });
  }

  /**
   * The protocol's batch body, each event's members spliced in from {@code blobs} (one per event
   * handed out; null for one whose copy is gone, which is left out); {@code batchAckId} null in auto
   * ack mode (no ackIds then). The ackIds' marks carry the sizes the script told.
   */
  private static Batch encode(Response reply, List<Buffer> blobs, String batchAckId, String salt, String mark) {
    int handed = blobs.size();
    List<String> ackIds = new ArrayList<>(handed);
    int size = 96;
    for (Buffer blob : blobs) {
      size += (blob == null ? 0 : blob.length()) + (batchAckId == null ? 40 : 200);
    }
    Buffer json = Buffer.buffer(size); // sized once: growing copies the whole batch each time
    // the batch's size ends its batchAckId: the ack tracker packs its calls by it
    json.appendString("{\"batchAckId\":")
        .appendString(handed > 0 && batchAckId != null ? "\"" + batchAckId + String.format("%03x", handed) + "\"" : "null")
        .appendString(",\"events\":[");
    String deadline = reply.get(6).toString();
    boolean first = true;
    for (int i = 0; i < handed; i++) {
      int at = FIRST_EVENT + i * 4;
      String deliveryCount = reply.get(at + 2).toString();
      Buffer blob = blobs.get(i);
      String ackId = null;
      if (batchAckId != null) {
        ackId = AckIds.make(salt, reply.get(at).toString(), reply.get(at + 1).toString(), deliveryCount,
            AckIds.mark(mark, Stubs.size(reply.get(at + 3))));
        ackIds.add(ackId);
      }
      if (blob == null) {
        continue;
      }
      json.appendString(first ? "{" : ",{");
      first = false;
      if (ackId != null) {
        json.appendString("\"ackId\":\"").appendString(ackId).appendString("\",");
      }
      json.appendBuffer(blob).appendString(",\"deliveryCount\":").appendString(deliveryCount);
      if (batchAckId != null) {
        json.appendString(",\"ackDeadline\":").appendString(deadline);
      }
      json.appendString("}");
    }
    json.appendString("]");
    int heldBack = reply.get(2).toInteger();
    if (heldBack > 0) {
      json.appendString(HELD_BACK[heldBack]);
    }
    json.appendString("}");
    return new Batch(json, handed, ackIds);
  }

  private static byte[] randomBytes(int count) {
    byte[] bytes = new byte[count];
    RANDOM.nextBytes(bytes);
    return bytes;
  }
}
