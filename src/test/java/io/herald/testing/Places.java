package io.herald.testing;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;

/** Where a consumer's events are held, read straight from Redis. */
public final class Places {
  private Places() {}

  /**
   * How many of the consumer's stored events are held in none, or in more than one, of its backlog
   * (live pairs of {@code arrivals}), pending, stale, scheduled, dead-letter and error queues:
   * 0 when every event is in exactly one place.
   */
  public static long misplaced(String url, String consumer) {
    String prefix = "herald:{c:" + consumer + "}:";
    return RedisCli.send(url, Request.cmd(Command.EVAL).arg("""
        -- the backlog's live pairs (those of KEYS[8], the dead ones, do not count)
        local backlog = {}
        local pairs = redis.call('LRANGE', KEYS[2], 0, -1)
        for i = 1, #pairs, 2 do
          if redis.call('SISMEMBER', KEYS[8], pairs[i]) == 0 then backlog[pairs[i]] = (backlog[pairs[i]] or 0) + 1 end
        end
        local n = 0
        for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
          local count = backlog[id] or 0
          for i = 3, 7 do
            if redis.call('ZSCORE', KEYS[i], id) then count = count + 1 end
          end
          if count ~= 1 then n = n + 1 end
        end
        return n""").arg(8).arg(prefix + "events").arg(prefix + "arrivals").arg(prefix + "pending")
        .arg(prefix + "stale").arg(prefix + "scheduled").arg(prefix + "dead").arg(prefix + "errors")
        .arg(prefix + "gone")).toLong();
  }

  /** Whether the consumer still stores the event. */
  public static boolean holds(String url, String consumer, String eventId) {
    return RedisCli.send(url, Request.cmd(Command.HEXISTS).arg("herald:{c:" + consumer + "}:events").arg(eventId))
        .toInteger() == 1;
  }
}
