package io.herald.publish;

import io.vertx.redis.client.Response;
import io.vertx.redis.client.ResponseType;
import java.util.HashSet;
import java.util.Set;

/**
 * What one consumer's spool script answered: whether it took the round's events (false: deleted,
 * or disabled and skipping them), whether it refused them all for every consumer (disabled, with
 * rejectPublishWhenRefused), and which it did not take for its own quota ({@code overQuota}:
 * refused for every consumer when {@code refusesForAll}, else skipped by it alone), and the
 * consumer's retention then ({@code retentionMs}, 0 when it took nothing, -1 when it did not exist).
 */
record SpoolReply(boolean took, boolean disabled, boolean refusesForAll, long retentionMs, Set<String> overQuota) {
  /** Whether the consumer did not exist (deleted meanwhile). */
  boolean deleted() {
    return !took && retentionMs < 0;
  }

  /** Where the eventIds over quota start in the script's answer; the ledger's figures follow them. */
  static final int OVER_QUOTA_FROM = 5;

  static SpoolReply parse(Response reply) {
    if (reply.type() != ResponseType.MULTI) {
      return new SpoolReply(false, reply.toLong() == -2, true, reply.toLong() == -1 ? -1 : 0, Set.of());
    }
    Set<String> overQuota = new HashSet<>();
    int count = reply.get(OVER_QUOTA_FROM - 1).toInteger();
    for (int i = 0; i < count; i++) {
      overQuota.add(reply.get(OVER_QUOTA_FROM + i).toString());
    }
    return new SpoolReply(true, false, reply.get(2).toInteger() == 1, reply.get(3).toLong(), overQuota);
  }

  /** Where the ledger's figures start in the script's answer. */
  int figuresFrom() {
    return OVER_QUOTA_FROM + overQuota.size();
  }

  /** Whether the consumer refused {@code eventId} for every consumer. */
  boolean refuses(String eventId) {
    return disabled || refusesForAll && overQuota.contains(eventId);
  }

  /** Whether the consumer holds {@code eventId} from this round. */
  boolean holds(String eventId) {
    return took && !overQuota.contains(eventId);
  }
}
