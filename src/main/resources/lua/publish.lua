-- Spools one publish request's events for one consumer.
-- ARGV triples of eventId, blob, ttlMs ('' for none).
-- Returns {events spooled, the earliest TTL end among them or -1} (the scheduler must know it), or
-- -1 when the consumer does not exist or is disabled (the node's copy of its settings was behind).
local cfg = settings()
if not cfg or not cfg.enabled then return -1 end
local events = #ARGV / 3
local seq = redis.call('HINCRBY', K.meta, 'seq', events) - events
local spooled, bytes, earliest = 0, 0, -1
for i = 1, #ARGV, 3 do
  local id, blob, ttl = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  seq = seq + 1
  -- HSETNX: a repeated eventId is spooled once
  if redis.call('HSETNX', K.events, id, blob) == 1 then
    redis.call('ZADD', K.backlog, seq, id)
    spooled = spooled + 1
    bytes = bytes + #blob
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
count({published = spooled, spooledBytes = bytes})
if spooled > 0 then wake_waiter(cfg) end
return {spooled, earliest}
