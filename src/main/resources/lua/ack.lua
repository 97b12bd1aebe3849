-- Acknowledges deliveries by ackId and by batchAckId. Only an event's latest delivery can be acked.
-- KEYS[10..] batch keys, one per batchAckId
-- ARGV[1] number of ackIds, ARGV[2..] the ackIds
-- Returns {statuses of the ackIds in order, then per batch key {ackId, status, ...} ({} if unknown)}.
local cfg = settings()
if not cfg then return -1 end
local now = now_ms()
local acked = 0

local function ack(ackId)
  local id, seq, n, token = string.match(ackId, '^([%x%-]+)%.(%d+)%.(%d+)%.(%x+)$')
  if not id or token ~= ack_token(cfg, id, seq, n) then return 'UNKNOWN' end
  seq, n = tonumber(seq), tonumber(n)
  local current = delivery_state(id)
  if current then
    if current ~= n then return 'EXPIRED' end
    forget(id)
    remember_ack(seq)
    acked = acked + 1
    return 'ACKED'
  end
  if was_acked(seq) then return 'ALREADY_ACKED' end
  return 'UNKNOWN'
end

local statuses = {}
local count = tonumber(ARGV[1])
for i = 2, count + 1 do
  table.insert(statuses, ack(ARGV[i]))
end
local result = {statuses}
for k = 10, #KEYS do
  local rows = {}
  local members = redis.call('GET', KEYS[k])
  if members then
    for ackId in string.gmatch(members, '%S+') do
      table.insert(rows, ackId)
      table.insert(rows, ack(ackId))
    end
  end
  table.insert(result, rows)
end
if acked > 0 then
  redis.call('HINCRBY', K.meta, 'acked', acked)
end
return result
