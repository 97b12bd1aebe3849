-- Sends events of the dead-letter or error queue back to the consumer's backlog, at its end in the
-- order redriven (an event that left the backlog from its middle and whose place there was not
-- reached yet takes that place again, see enter_backlog), with their delivery count reset. Back in the spool they count against the
-- consumer's own quotaBytes/quotaEvents again, checked here exactly: an event that does not fit
-- stays in its queue (and a redrive of the head stops there). The quotas that span consumers were
-- judged by the ledger before (ARGV[4] names the hold of the room it gave).
-- ARGV[1] 'dead' or 'errors', ARGV[2] '*' for the head of the queue, else '' ; ARGV[3] most events
-- (for '*'); ARGV[4] the ledger hold ('' for none); ARGV[5..] the eventIds (for '')
-- Returns {redriven count, 1 when an event did not fit the consumer's quota else 0, when the
-- consumer next needs the scheduler (-1 when it moved nothing or holds nothing timed: redriven
-- events have their retention ends in the expiry index), number n of statuses, then per named eventId its status REDRIVEN, QUOTA_EXCEEDED or UNKNOWN, then (with a
-- hold) the consumer's figures (spool_figures)}, or -1 when the consumer does not exist. A caller
-- redriving all repeats '*' calls until one moves fewer than asked.
local cfg = settings()
if not cfg then return -1 end
local queue = ARGV[1] == 'dead' and K.dead or K.errors
local moved, full = 0, 0
local back = {}
local now = clock()
local quota = own_quota(cfg)

local function redrive(id)
  local failure = redis.call('HGET', K.failures, id)
  if not failure or not redis.call('ZSCORE', queue, id) then return 'UNKNOWN' end
  if redis.call('HEXISTS', K.events, id) == 0 then
    -- an entry that outlived its event (left by an older version): it goes, nothing comes back
    forget(id)
    return 'UNKNOWN'
  end
  -- an event failed without a known arrival sequence comes back as a new arrival
  local seq = cjson.decode(failure).seq or redis.call('HINCRBY', K.meta, 'seq', 1)
  -- with ordering by key, it joins its key's line again, placed by its arrival: it may have to
  -- wait for its turn
  local value = redis.call('HGET', K.events, id)
  local key = cfg.ordering and blob_key(value)
  local line = key and key_joins({key})
  local bytes = event_bytes(value)
  if not quota.fits(bytes) then
    full = 1
    return 'QUOTA_EXCEEDED'
  end
  quota.take(bytes)
  redis.call('ZREM', queue, id)
  redis.call('HDEL', K.failures, id)
  -- back with what is left of its retention (a TTL does not follow it into the queues); at the
  -- backlog's end it is no longer in publish order there, so the expiry index ends it
  redis.call('ZADD', K.expiry, retention_ends(cfg, id), id)
  if not line or line.join(key, seq, id) then
    table.insert(back, id)
    -- %d: some Redis versions (7.2.0-7.2.4) write a Lua number such as 100000000 as 1e+08
    table.insert(back, string.format('%d', seq))
  end
  if line then line.write() end
  -- back in the consumer's spool (not charged to its topic again)
  spool_more(bytes, 1)
  moved = moved + 1
  note(id, 'R ' .. now)
  return 'REDRIVEN'
end

local statuses = {}
if ARGV[2] == '*' then
  for _, id in ipairs(redis.call('ZRANGE', queue, 0, tonumber(ARGV[3]) - 1)) do
    if redrive(id) == 'QUOTA_EXCEEDED' then break end
  end
else
  for i = 5, #ARGV do
    table.insert(statuses, redrive(ARGV[i]))
  end
end
enter_backlog(back)
realize(ARGV[4])
count({redriven = moved})
if moved > 0 then wake_waiter(cfg) end
local result = {moved, full, moved > 0 and next_due(cfg, next_redelivery(now)) or -1, #statuses}
for _, status in ipairs(statuses) do table.insert(result, status) end
if ARGV[4] ~= '' then
  for _, figure in ipairs(spool_figures()) do table.insert(result, figure) end
end
return result
