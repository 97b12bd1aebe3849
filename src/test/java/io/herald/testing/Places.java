package io.herald.testing;

import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;

/** Where a consumer's events are held, read straight from Redis. */
public final class Places {
  private Places() {}

  /**
   * How many of the consumer's stored events (an events entry, or a live pair of {@code arrivals})
   * are held in none, or in more than one, of its backlog (live pairs), pending, stale, scheduled,
   * dead-letter and error queues, or are a live pair with neither a stub nor an events entry: 0 when
   * every event is in exactly one place.
   */
  public static long misplaced(String url, String consumer) {
    String prefix = "herald:{c:" + consumer + "}:";
    return RedisCli.send(url, Request.cmd(Command.EVAL).arg("""
        -- the backlog's live pairs (those of KEYS[8], the dead ones, do not count)
        local backlog, stored = {}, {}
        local pairs = redis.call('LRANGE', KEYS[2], 0, -1)
        for i = 1, #pairs, 2 do
          if redis.call('SISMEMBER', KEYS[8], pairs[i]) == 0 then
            backlog[pairs[i]] = (backlog[pairs[i]] or 0) + 1
            -- a pair with no stub and no events entry stands for no event: counted misplaced too
            stored[pairs[i]] = true
          end
        end
        for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
          if string.sub(id, 1, 1) ~= '~' then stored[id] = true end
        end
        local n = 0
        for i = 1, #pairs, 2 do
          if backlog[pairs[i]] and not string.find(pairs[i + 1], ':', 1, true)
              and redis.call('HEXISTS', KEYS[1], pairs[i]) == 0 then
            n = n + 1
          end
        end
        for id in next, stored do
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

  /** Whether the consumer still stores the event: an events entry, or a live backlog pair keeping its stub. */
  public static boolean holds(String url, String consumer, String eventId) {
    String prefix = "herald:{c:" + consumer + "}:";
    return RedisCli.send(url, Request.cmd(Command.EVAL).arg("""
        if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 1 end
        local at = redis.call('LPOS', KEYS[2], ARGV[1])
        if not at or redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then return 0 end
        return string.find(redis.call('LINDEX', KEYS[2], at + 1), ':', 1, true) and 1 or 0""")
        .arg(3).arg(prefix + "events").arg(prefix + "arrivals").arg(prefix + "gone").arg(eventId)).toInteger() == 1;
  }
}
