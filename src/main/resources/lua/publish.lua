-- Spools one publish request's events for one consumer.
-- ARGV pairs of eventId, blob.
-- Returns the number of events spooled, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local seq = redis.call('HINCRBY', K.meta, 'seq', #ARGV / 2) - #ARGV / 2
local spooled, bytes = 0, 0
for i = 1, #ARGV, 2 do
  local id, blob = ARGV[i], ARGV[i + 1]
  seq = seq + 1
  -- HSETNX: a repeated eventId is spooled once
  if redis.call('HSETNX', K.events, id, blob) == 1 then
    redis.call('ZADD', K.backlog, seq, id)
    spooled = spooled + 1
    bytes = bytes + #blob
  end
end
count({published = spooled, spooledBytes = bytes})
if spooled > 0 then wake_waiter(cfg) end
return spooled
