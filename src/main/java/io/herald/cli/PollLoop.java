package io.herald.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;

/**
 * Polls one consumer, prints each event as a JSON line and, when asked, acks each batch once it is
 * printed (so an event is acked only after it was written out: at least once). A poll that finds
 * nothing ends the loop unless it follows; a 429 waits out its {@code Retry-After}; a 503 or a lost
 * connection is tried again, with backoff (3 tries in all, or until answered while following).
 */
final class PollLoop {
  private static final int TRIES = 3;
  private static final long MIN_FOLLOW_POLL_MS = 1000;

  /** What to do with a printed batch. */
  enum Ack {
    /** ack the batch (its batchAckId) once every event of it is printed */
    BATCH,
    /** leave it unacked: delivered again after its deadline (for looking without taking) */
    NONE
  }

  private final GatewayClient client;
  private final String consumerPath;
  private final PrintWriter out;
  private final PrintWriter err;
  int maxEvents;
  long count;
  long waitMs;
  boolean follow;
  Ack ack = Ack.BATCH;

  private long printed;

  PollLoop(GatewayClient client, String consumer, PrintWriter out, PrintWriter err) {
    this.client = client;
    this.consumerPath = "/v1/consumers/" + consumer;
    this.out = out;
    this.err = err;
  }

  /** Runs until done; returns the exit code. */
  int run() throws InterruptedException {
    while (count == 0 || printed < count) {
      GatewayClient.Answer answer = call("poll", consumerPath + "/poll", pollBody());
      if (answer == null) {
        return ExitCodes.UNAVAILABLE;
      }
      if (answer.status() == 429) {
        long seconds = Math.max(1, answer.retryAfterSeconds());
        err.println("the consumer is blocked (Too Many Requests); polling again in " + seconds + " s");
        err.flush();
        Thread.sleep(seconds * 1000);
        continue;
      }
      if (!answer.ok()) {
        err.println("poll refused (" + answer.errorCode() + "): " + answer.errorMessage());
        return ExitCodes.REFUSED;
      }
      JsonArray events = answer.body().getJsonArray("events");
      if (events.isEmpty()) {
        String heldBack = answer.body().getString("heldBack");
        if (!follow) {
          if (heldBack != null) {
            err.println("new events are held back: " + heldBack);
          }
          return ExitCodes.OK;
        }
        if (waitMs < MIN_FOLLOW_POLL_MS) {
          // empty short polls back to back would use up the consumer's rate limit for all its clients
          Thread.sleep(MIN_FOLLOW_POLL_MS - waitMs);
        }
        continue;
      }
      for (Object event : events) {
        out.println(((JsonObject) event).encode());
      }
      if (out.checkError()) {
        // the reader went away (a closed pipe): what was not written out must not be acked
        err.println("standard output is closed: the last " + events.size() + " events are left unacked, to come again");
        return ExitCodes.OK;
      }
      printed += events.size();
      String batchAckId = answer.body().getString("batchAckId");
      if (ack == Ack.BATCH && batchAckId != null) {
        int acked = ack(batchAckId);
        if (acked != ExitCodes.OK) {
          return acked;
        }
      }
    }
    return ExitCodes.OK;
  }

  private JsonObject pollBody() {
    JsonObject body = new JsonObject().put("waitMs", waitMs);
    if (count > 0) {
      // never more than is left to print: what is not printed must not be acked
      body.put("maxEvents", (int) Math.min(count - printed, maxEvents > 0 ? maxEvents : 1000));
    } else if (maxEvents > 0) {
      body.put("maxEvents", maxEvents);
    }
    return body;
  }

  private int ack(String batchAckId) throws InterruptedException {
    // the same batchAckId again is harmless (ALREADY_ACKED), so a failed ack is simply sent again
    GatewayClient.Answer answer = call("ack", consumerPath + "/acks", new JsonObject().put("batchAckIds", new JsonArray().add(batchAckId)));
    if (answer == null) {
      return ExitCodes.UNAVAILABLE;
    }
    if (!answer.ok()) {
      err.println("ack refused (" + answer.errorCode() + "): " + answer.errorMessage());
      return ExitCodes.REFUSED;
    }
    for (Object r : answer.body().getJsonArray("results")) {
      JsonObject result = (JsonObject) r;
      String status = result.getString("status");
      if (!"ACKED".equals(status) && !"ALREADY_ACKED".equals(status)) {
        err.println("not acked (" + status + "): " + result.getString("ackId") + " (it may be delivered again)");
      }
    }
    return ExitCodes.OK;
  }

  private GatewayClient.Answer call(String what, String path, JsonObject body) throws InterruptedException {
    return client.postRetrying(what, path, body, follow ? 0 : TRIES, err);
  }
}
