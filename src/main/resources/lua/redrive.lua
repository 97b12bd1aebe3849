-- Sends events of the dead-letter or error queue back to the consumer's queue, at their place in
-- arrival order, with their delivery count reset.
-- ARGV[1] 'dead' or 'errors', ARGV[2] '*' for the head of the queue, else '' ; ARGV[3] most events
-- (for '*'); ARGV[4..] the eventIds (for '')
-- Returns {redriven count, then per named eventId its status REDRIVEN or UNKNOWN}, or -1 when the
-- consumer does not exist. A caller redriving all repeats '*' calls until one moves nothing.
local cfg = settings()
if not cfg then return -1 end
local queue = ARGV[1] == 'dead' and K.dead or K.errors
local moved = 0
local now = now_ms()

local function redrive(id)
  local failure = redis.call('HGET', K.failures, id)
  if not failure or not redis.call('ZSCORE', queue, id) then return 'UNKNOWN' end
  local seq = cjson.decode(failure).seq
  if not seq or redis.call('HEXISTS', K.events, id) == 0 then
    -- an entry that outlived its event (left by an older version): it goes, nothing comes back
    forget(id)
    return 'UNKNOWN'
  end
  redis.call('ZREM', queue, id)
  redis.call('HDEL', K.failures, id)
  -- back with what is left of its retention (a TTL does not follow it into the queues)
  redis.call('ZREM', K.expiry, id)
  redis.call('ZADD', K.backlog, seq, id)
  -- back in the consumer's spool (not charged to its topic again)
  spool_more(redis.call('HSTRLEN', K.events, id), 1)
  moved = moved + 1
  note(id, 'R ' .. now)
  return 'REDRIVEN'
end

local result = {0}
if ARGV[2] == '*' then
  for _, id in ipairs(redis.call('ZRANGE', queue, 0, tonumber(ARGV[3]) - 1)) do
    redrive(id)
  end
else
  for i = 4, #ARGV do
    table.insert(result, redrive(ARGV[i]))
  end
end
result[1] = moved
count({redriven = moved})
if moved > 0 then wake_waiter(cfg) end
return result
