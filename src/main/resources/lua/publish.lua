-- Spools one publish round's events for one consumer.
-- KEYS[EXTRA_KEY] idempotent ZSET eventId -> when it was spooled, for the events published with an
--                 idempotencyKey during the last dedup window
-- ARGV[1] the ledger hold of this consumer's part of the round ('' for none)
-- ARGV[2] the dedup window in ms (publish.idempotencyWindowMs)
-- ARGV[3..] quintuples of eventId, blob, ttlMs ('' for none), the event's topic when it counts
-- against that topic's quota ('' otherwise), and 'K' when it was published with an idempotencyKey
-- ('' otherwise): such an event is spooled at most once for this consumer within the window,
-- whatever became of it since (acked, dead-lettered, dropped), so a retry of a publish whose outcome
-- was unknown never hands the consumer an event it already had.
-- Returns {events spooled, the earliest TTL end among them when it is the consumer's earliest expiry
-- (the scheduler must know it), else -1,
-- then the spool's figures for the ledger (spool_figures)}, or -1 when the consumer does not exist
-- or is disabled (the node's copy of its settings was behind).
local cfg = settings()
if not cfg or not cfg.enabled then return -1 end
local idempotent = KEYS[EXTRA_KEY]
local events = (#ARGV - 2) / 5
local seq = redis.call('HINCRBY', K.meta, 'seq', events) - events
local spooled, earliest = 0, -1
local keyedAt
for i = 3, #ARGV, 5 do
  local id, blob, ttl, topic = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  seq = seq + 1
  local fresh = true
  if ARGV[i + 4] == 'K' then
    keyedAt = keyedAt or now_ms()
    fresh = not redis.call('ZSCORE', idempotent, id)
    if fresh then redis.call('ZADD', idempotent, keyedAt, id) end
  end
  -- HSETNX: a repeated eventId is spooled once
  if fresh and redis.call('HSETNX', K.events, id, blob) == 1 then
    redis.call('ZADD', K.backlog, seq, id)
    spooled = spooled + 1
    spool_more(#blob, 1)
    if topic ~= '' then
      redis.call('HSET', K.charged, id, topic)
      redis.call('HINCRBY', K.topicBytes, topic, #blob)
    end
    -- the smaller of the event's ttlMs and the consumer's maxTtlMs, when it ends before retention
    if cfg.maxTtlMs > 0 and (not ttl or cfg.maxTtlMs < ttl) then ttl = cfg.maxTtlMs end
    if ttl and ttl < cfg.retentionMs then
      local ends = published_at(id) + ttl
      redis.call('ZADD', K.ttl, ends, id)
      redis.call('ZADD', K.expiry, ends, id)
      if earliest < 0 or ends < earliest then earliest = ends end
    end
  end
end
if keyedAt then
  redis.call('ZREMRANGEBYSCORE', idempotent, '-inf', keyedAt - tonumber(ARGV[2]))
  redis.call('PEXPIRE', idempotent, ARGV[2])
end
-- only a TTL ending before the consumer's other expiries may need filing (see DueTimes)
if earliest >= 0 and tonumber(redis.call('ZRANGE', K.expiry, 0, 0, 'WITHSCORES')[2]) < earliest then
  earliest = -1
end
realize(ARGV[1])
count({published = spooled})
if spooled > 0 then wake_waiter(cfg) end
local result = {spooled, earliest}
for _, figure in ipairs(spool_figures()) do table.insert(result, figure) end
return result
