-- Spools one publish request's events for one consumer.
-- ARGV[1] consumer name, ARGV[2] wake-up channel, ARGV[3..] pairs of eventId, blob.
-- Returns the number of events spooled, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local count = (#ARGV - 2) / 2
local seq = redis.call('HINCRBY', K.meta, 'seq', count) - count
local bytes = 0
for i = 3, #ARGV, 2 do
  local id, blob = ARGV[i], ARGV[i + 1]
  seq = seq + 1
  -- HSETNX: a repeated eventId (a client retry of the same call) is spooled once
  if redis.call('HSETNX', K.events, id, blob) == 1 then
    -- the first 12 hex digits of an eventId are its publish time in ms
    local publishedAt = tonumber(string.sub(id, 1, 12), 16)
    redis.call('ZADD', K.backlog, seq, id)
    redis.call('ZADD', K.expiry, publishedAt + cfg.retentionMs, id)
    bytes = bytes + #blob
  end
end
redis.call('HINCRBY', K.meta, 'published', count)
redis.call('HINCRBY', K.meta, 'spooledBytes', bytes)
if redis.call('EXISTS', K.listening) == 1 then
  redis.call('PUBLISH', ARGV[2], ARGV[1])
end
return count
