-- Acks (discards) events of the dead-letter or error queue by the ackIds its reads gave out.
-- KEYS[EXTRA_KEY..] batch keys, one per batchAckId
-- ARGV[1] 'dead' or 'errors', ARGV[2] number of ackIds, ARGV[3..] the ackIds
-- Returns {statuses of the ackIds, then per batch key {ackId, status, ...}, then the copies it let
-- go of, for the node to release}, or -1 when the consumer does not exist. Statuses: ACKED,
-- ALREADY_ACKED, UNKNOWN.
local cfg = settings()
if not cfg then return -1 end
answers_let_go = true
local queue = ARGV[1] == 'dead' and K.dead or K.errors

local function ack(ackId)
  local id, seq, _, mark = read_ack_id(cfg, ackId, ARGV[1])
  if not id then return 'UNKNOWN' end
  local since = redis.call('ZSCORE', queue, id)
  -- the mark is when it entered the queue: a read of an earlier stay there acks nothing now
  if since and string.format('%d', since) == mark then
    note(id, 'A ' .. clock())
    forget(id)
    remember_ack(tonumber(seq))
    return 'ACKED'
  end
  if was_acked(tonumber(seq)) then return 'ALREADY_ACKED' end
  return 'UNKNOWN'
end

-- at most one batch per call (the node sends them one by one): no budget needed
local result = ack_each(one_by_one(ack), 3, tonumber(ARGV[2]) + 2, math.huge)
write_memory()
table.insert(result, let_go_copies)
return result
