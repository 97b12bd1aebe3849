-- Hands out one batch: stale deliveries whose backoff has passed first, then new events in
-- arrival order while the consumer's unacked count is below maxUnacked.
-- KEYS[10] the batch key (its batchAckId), written only when events are handed out.
-- ARGV[1] most events to hand out
-- ARGV[2] '1' to mark the consumer as listened for when nothing is handed out (long poll)
-- ARGV[3] how long that mark lasts, ms
-- Returns {1, now, heldBack, nextDue, ackId1, blob1, deliveryCount1, deadline1, ...}, or {-1} when
-- the consumer does not exist. nextDue: when the scheduler next has work for the consumer (an ack
-- deadline or a retention expiry), -1 if never. In auto ack mode ackIds and deadlines are ''.
local cfg = settings()
if not cfg then return {-1} end
local now = now_ms()
local max = tonumber(ARGV[1])
local out = {1, now, 0, -1}
local ackIds = {}
local handed = 0

make_due_stale(cfg, now, 1000)

local function hand_out(id, seq)
  local blob = redis.call('HGET', K.events, id)
  if not blob then return end
  local expiresAt = redis.call('ZSCORE', K.expiry, id)
  if expiresAt and tonumber(expiresAt) <= now then
    forget(id)
    redis.call('HINCRBY', K.meta, 'expired', 1)
    return
  end
  local n = (delivery_state(id) or 0) + 1
  handed = handed + 1
  redis.call('HINCRBY', K.meta, 'delivered', 1)
  if n > 1 then redis.call('HINCRBY', K.meta, 'redelivered', 1) end
  if cfg.auto then
    -- at-most-once: handing out is acknowledging
    forget(id)
    remember_ack(seq)
    redis.call('HINCRBY', K.meta, 'acked', 1)
    table.insert(out, '')
    table.insert(out, blob)
    table.insert(out, n)
    table.insert(out, '')
    return
  end
  local deadline = now + cfg.ackTimeoutMs
  redis.call('HSET', K.deliveries, id, n .. ':' .. seq)
  redis.call('ZADD', K.pending, deadline, id)
  redis.call('ZREM', K.stale, id)
  redis.call('ZADD', K.first, 'NX', now, id)
  local ackId = id .. '.' .. seq .. '.' .. n .. '.' .. ack_token(cfg, id, seq, n)
  table.insert(ackIds, ackId)
  table.insert(out, ackId)
  table.insert(out, blob)
  table.insert(out, n)
  table.insert(out, deadline)
end

for _, id in ipairs(redis.call('ZRANGEBYSCORE', K.stale, '-inf', now, 'LIMIT', 0, max)) do
  local _, seq = delivery_state(id)
  hand_out(id, seq)
end

local want = max - handed
if want > 0 then
  local unacked = redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.stale)
  local take = math.min(want, cfg.maxUnacked - unacked)
  if take > 0 then
    local popped = redis.call('ZPOPMIN', K.backlog, take)
    for i = 1, #popped, 2 do
      hand_out(popped[i], tonumber(popped[i + 1]))
    end
  end
  if take < want and redis.call('ZCARD', K.backlog) > 0 then
    out[3] = 1
  end
end

local firstExpiry = redis.call('ZRANGE', K.expiry, 0, 0, 'WITHSCORES')[2]
if #ackIds > 0 then
  out[4] = now + cfg.ackTimeoutMs
end
if firstExpiry and (out[4] < 0 or tonumber(firstExpiry) < out[4]) then
  out[4] = tonumber(firstExpiry)
end

if #ackIds > 0 then
  redis.call('SET', KEYS[10], table.concat(ackIds, ' '), 'PX', cfg.ackTimeoutMs + 3600000)
elseif handed == 0 and ARGV[2] == '1' then
  redis.call('SET', K.listening, '1', 'PX', tonumber(ARGV[3]))
end
return out
