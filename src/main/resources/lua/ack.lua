-- Acknowledges deliveries by ackId and by batchAckId. Only an event's latest delivery can be acked.
-- KEYS[EXTRA_KEY..] batch keys, one per batchAckId
-- ARGV[1] number of ackIds n, ARGV[2..n+1] the ackIds, ARGV[n+2] most acks before batches are left
-- for another call (see ack_each)
-- Returns {statuses of the ackIds in order, then per batch key {ackId, status, ...} ({} if unknown,
-- 0 if left for another call)}, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end

local acked_count = 0

-- Settles the ackIds in order, each event's structures changed by one variadic command for all.
local function ack_all(ackIds)
  local statuses, parts, ids = {}, {}, {}
  for i, ackId in ipairs(ackIds) do
    local id, seq, n, mark = read_ack_id(cfg, ackId)
    if id then
      parts[i] = {id, seq, n, mark}
      table.insert(ids, id)
    end
  end
  local entries = {}
  for i, entry in ipairs(hmget(K.deliveries, ids)) do
    entries[ids[i]] = entry
  end
  local acked, seqs, handouts = {}, {}, {}
  for i = 1, #ackIds do
    local p = parts[i]
    if not p then
      statuses[i] = 'UNKNOWN'
    else
      local id, seq, n, mark = p[1], p[2], p[3], p[4]
      local entry = entries[id]
      if entry == true then
        -- a second ackId of an event acked earlier in this call
        statuses[i] = 'ALREADY_ACKED'
      else
        local current, currentSeq, currentMark = delivery_state(id, entry or '')
        if not current then
          statuses[i] = settled_status(cfg, id, tonumber(seq))
        elseif current ~= n or currentSeq ~= seq or currentMark ~= mark then
          statuses[i] = 'EXPIRED'
        else
          statuses[i] = 'ACKED'
          entries[id] = true
          table.insert(acked, id)
          table.insert(seqs, tonumber(seq))
          table.insert(handouts, {id, waiting_handout(entry)})
        end
      end
    end
  end
  if #acked == 0 then return statuses end
  note_acks(now_ms(), handouts)
  -- HSTRLEN per event costs Redis less than bringing each blob into Lua for its length
  for _, id in ipairs(acked) do
    spool_less(id, redis.call('HSTRLEN', K.events, id))
  end
  call_each('HDEL', K.events, acked, 1)
  call_each('HDEL', K.deliveries, acked, 1)
  -- handed out, stale, or waiting out a nack delay (acking it then still settles it)
  if call_each('ZREM', K.pending, acked, 1) < #acked then
    call_each('ZREM', K.stale, acked, 1)
    call_each('ZREM', K.scheduled, acked, 1)
  end
  call_each('HDEL', K.reasons, acked, 1)
  call_each('ZREM', K.expiry, acked, 1)
  call_each('ZREM', K.first, acked, 1)
  if uses_ttl() then call_each('ZREM', K.ttl, acked, 1) end
  remember_acks(cfg, seqs)
  acked_count = #acked
  return statuses
end

local result = ack_each(ack_all, 2, tonumber(ARGV[1]) + 1, tonumber(ARGV[tonumber(ARGV[1]) + 2]))
count({acked = acked_count})
touch_acked()
-- room below maxUnacked: a poll held back by it may go on
if acked_count > 0 then wake_waiter(cfg) end
return result
