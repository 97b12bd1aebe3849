-- Extends deliveries: a new deadline now + extendMs for each that is still its event's latest and
-- not settled (handed out or stale; a nacked one has ended).
-- ARGV[1] extendMs, ARGV[2..] the ackIds
-- Returns {{status, deadline, ...} per ackId in order, now, nextDue}, or -1 when the consumer does
-- not exist. Statuses: EXTENDED (with its deadline), EXPIRED, ALREADY_ACKED, UNKNOWN (deadline '').
local cfg = settings()
if not cfg then return -1 end
local now = clock()
local deadline = now + tonumber(ARGV[1])

local function extend(ackId)
  local id, seq, n, mark = read_ack_id(cfg, ackId)
  if not id then return 'UNKNOWN' end
  local current, currentSeq, currentMark = delivery_state(id)
  if not current then
    local status = settled_status(id, tonumber(seq), n, mark)
    -- an event that left for a failure queue is no delivery to extend
    return status == 'DEAD_LETTERED' and 'EXPIRED' or status
  end
  if current ~= n or currentSeq ~= seq or currentMark ~= mark then return 'EXPIRED' end
  local pendingDeadline = tonumber(redis.call('ZSCORE', K.pending, id))
  if not pendingDeadline and redis.call('ZREM', K.stale, id) == 0 then
    return 'EXPIRED'
  end
  -- a stale one's is kept already
  if pendingDeadline then keep_first(cfg, id, pendingDeadline) end
  redis.call('ZADD', K.pending, deadline, id)
  note(id, 'E ' .. now .. ' ' .. deadline)
  local ends = ends_at(cfg, id)
  if ends < deadline then
    redis.call('ZADD', K.expiry, ends, id)
  else
    redis.call('ZREM', K.expiry, id)
  end
  return 'EXTENDED'
end

-- an ackId repeated in the request is extended once; its rows repeat the first's status
local results, answered = {}, {}
for i = 2, #ARGV do
  local ackId = ARGV[i]
  answered[ackId] = answered[ackId] or extend(ackId)
  local status = answered[ackId]
  table.insert(results, status)
  table.insert(results, status == 'EXTENDED' and deadline or '')
end
return {results, now, next_due(cfg, next_redelivery(now))}
