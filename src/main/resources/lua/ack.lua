-- Acknowledges deliveries by ackId and by batchAckId. Only an event's latest delivery can be acked.
-- KEYS[EXTRA_KEY..] batch keys, one per batchAckId
-- ARGV[1] number of ackIds n, ARGV[2..n+1] the ackIds, ARGV[n+2] most acks before batches are left
-- for another call (see ack_each)
-- Returns {statuses of the ackIds in order, then per batch key {ackId, status, ...} ({} if unknown,
-- 0 if left for another call)}, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local acked = 0
local now

local function ack(ackId)
  local id, seq, n, mark = read_ack_id(cfg, ackId)
  if not id then return 'UNKNOWN' end
  local entry = redis.call('HGET', K.deliveries, id)
  local current, currentSeq, currentMark = delivery_state(id, entry)
  if current then
    if current ~= n or currentSeq ~= seq or currentMark ~= mark then return 'EXPIRED' end
    now = now or now_ms()
    note_ack(id, now, waiting_handout(entry))
    spool_less(id, redis.call('HSTRLEN', K.events, id))
    redis.call('HDEL', K.events, id)
    redis.call('HDEL', K.deliveries, id)
    -- handed out, stale, or waiting out a nack delay (acking it then still settles it)
    if redis.call('ZREM', K.pending, id) == 0 and redis.call('ZREM', K.stale, id) == 0 then
      redis.call('ZREM', K.scheduled, id)
    end
    redis.call('HDEL', K.reasons, id)
    redis.call('ZREM', K.expiry, id)
    drop_ttl(id)
    redis.call('ZREM', K.first, id)
    remember_ack(cfg, tonumber(seq))
    acked = acked + 1
    return 'ACKED'
  end
  return settled_status(cfg, id, tonumber(seq))
end

local result = ack_each(ack, 2, tonumber(ARGV[1]) + 1, tonumber(ARGV[tonumber(ARGV[1]) + 2]))
count({acked = acked})
touch_acked()
-- room below maxUnacked: a poll held back by it may go on
if acked > 0 then wake_waiter(cfg) end
return result
