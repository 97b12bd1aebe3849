-- Nacks deliveries. Only an event's latest delivery can be nacked (as for acks).
-- ARGV[1] 'REQUEUE' or 'REJECT'
-- ARGV[2] REQUEUE: the delay in ms before it goes out again, '' for the consumer's backoff for its
--         delivery count (the backoff a missed deadline gets)
-- ARGV[3] the reason, kept with the event ('' for none)
-- ARGV[4] '1' when it comes by another path than a socket's (see tell_windows), else ''
-- ARGV[5..] the ackIds
-- Returns {{status per ackId}, now, nextDue}, or -1 when the consumer does not exist. Statuses:
-- REQUEUED, DEAD_LETTERED (a requeue past maxDeliveries), REJECTED, DROPPED (the queue it would go
-- to is off), EXPIRED, ALREADY_ACKED, UNKNOWN. A REQUEUE of a delivery already waiting out one is
-- REQUEUED and changes nothing.
local cfg = settings()
if not cfg then return -1 end
local now = clock()
local requeue, reason = ARGV[1] == 'REQUEUE', ARGV[3]

local function nack(ackId)
  local id, seq, n, mark = read_ack_id(cfg, ackId)
  if not id then return 'UNKNOWN' end
  local current, currentSeq, currentMark, firstAt = delivery_state(id)
  if not current then return settled_status(id, tonumber(seq), n, mark) end
  if current ~= n or currentSeq ~= seq or currentMark ~= mark then return 'EXPIRED' end
  -- already waiting out a requeue of this delivery (a retried nack, a repeated ackId): it stands
  -- as it was, its delay and reason unchanged, and nothing more is noted
  if requeue and redis.call('ZSCORE', K.scheduled, id) then return 'REQUEUED' end
  if reason ~= '' then redis.call('HSET', K.reasons, id, reason) end
  note(id, 'N ' .. now .. ' ' .. ARGV[1] .. ' ' .. reason)
  local delivered = tonumber(n)
  if not requeue then return fail(cfg, id, seq, delivered, nil, now) end
  if cfg.maxDeliveries > 0 and delivered >= cfg.maxDeliveries then
    return fail(cfg, id, seq, delivered, 'MAX_DELIVERIES', now)
  end
  -- waiting out the delay it is not unacked: it leaves pending/stale (and first, kept aside)
  if firstAt == '' then
    firstAt = first_handout(cfg, id, tonumber(redis.call('ZSCORE', K.pending, id)) or now)
  end
  redis.call('ZREM', K.pending, id)
  redis.call('ZREM', K.stale, id)
  redis.call('ZREM', K.first, id)
  unacked_changed()
  -- note() above put its hand-out in its list
  redis.call('HSET', K.deliveries, id, n .. ':' .. seq .. ':' .. mark .. ':' .. firstAt .. LISTED)
  local delay = ARGV[2] ~= '' and tonumber(ARGV[2]) or backoff(cfg, delivered)
  redis.call('ZADD', K.scheduled, now + delay, id)
  redis.call('ZADD', K.expiry, (ends_at(cfg, id)), id)
  return 'REQUEUED'
end

local SETTLED = {REQUEUED = true, DEAD_LETTERED = true, REJECTED = true, DROPPED = true}

-- an ackId repeated in the request is settled once; its rows repeat the first's status
local statuses, answered, settled = {}, {}, false
for i = 5, #ARGV do
  local ackId = ARGV[i]
  answered[ackId] = answered[ackId] or nack(ackId)
  table.insert(statuses, answered[ackId])
  settled = settled or SETTLED[answered[ackId]] or false
end
count({})
write_memory()
wake_waiter(cfg)
if settled and ARGV[4] == '1' then tell_windows(cfg, now) end
return {statuses, now, next_due(cfg, next_redelivery(now))}
