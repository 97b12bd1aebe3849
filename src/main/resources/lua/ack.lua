-- Acknowledges deliveries by ackId and by batchAckId. Only an event's latest delivery can be acked.
-- The node reads the ackIds and checks their tokens (AckIds.java); this script gets what they name.
-- KEYS[EXTRA_KEY..] batch keys, one per batchAckId
-- ARGV[1] the first 8 characters of the consumer's salt that the node checked the tokens with ('' if
--         it knows none yet)
-- ARGV[2] number of deliveries m, ARGV[3..4m+2] per delivery its eventId, its deliveries entry as
--         the ackId tells it ("n:seq:mark"), its arrival sequence and the event's size its mark
--         tells ('' for a mark of an older version, which does not)
-- ARGV[4m+3] most acks before batches are left for another call (as ack_each)
-- ARGV[4m+4] '1' when some of them come by another path than a socket's (see tell_windows), else ''
-- Returns {statuses of the deliveries in order, then per batch key {eventId, entry, status, ...}
-- ({} if unknown, 0 if left for another call; a batch written by an older version holds ackIds:
-- then its rows are {ackId, '', status, ...}), then the copies it let go of (see let_go)}; {-4, salt} when the node checked the tokens with
-- another salt than the consumer's (it was deleted and made again, or the node knew none); -1
-- when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
answers_let_go = true
if ARGV[1] ~= string.sub(cfg.salt, 1, 8) then return {-4, cfg.salt} end
local now = clock()
local acked_count = 0

local DELIVERY = '^(%d+):(%d+):(%x+)$'

-- Settles the named deliveries (ids[i], entries[i] as their ackIds tell them, seqs[i] numbers,
-- sizes[i] numbers or nil) in order, each event's structures changed by one variadic command for
-- all; returns the statuses.
local function ack_all(ids, entries, seqs, sizes)
  local statuses = {}
  local current = hmget(K.deliveries, ids)
  local acked, ackedSeqs, ackedSizes, listed, done = {}, {}, {}, {}, {}
  for i, id in ipairs(ids) do
    local entry, named = current[i], entries[i]
    if done[id] then
      -- a second ackId of an event acked earlier in this call: the same one, or an earlier delivery's
      statuses[i] = done[id] == named and 'ALREADY_ACKED' or 'EXPIRED'
    elseif entry == named then
      -- the common case: its latest delivery, the list of its history (if any) not holding it yet
      statuses[i] = 'ACKED'
    else
      local n, seq, mark = string.match(named, DELIVERY)
      local currentN, currentSeq, currentMark, _, isListed = delivery_state(id, entry or '')
      if not n then
        statuses[i] = 'UNKNOWN'
      elseif not currentN then
        statuses[i] = settled_status(id, seqs[i], n, mark)
      elseif currentN ~= n or currentSeq ~= seq or currentMark ~= mark then
        statuses[i] = 'EXPIRED'
      else
        statuses[i] = 'ACKED'
        if isListed then table.insert(listed, id) end
      end
    end
    if statuses[i] == 'ACKED' then
      done[id] = named
      table.insert(acked, id)
      table.insert(ackedSeqs, seqs[i])
      -- the stored entry has the named delivery's mark, and with it the size the poll wrote
      ackedSizes[#acked] = sizes[i]
    end
  end
  if #acked == 0 then return statuses end
  for _, id in ipairs(listed) do note_ack(id, now) end
  local values = let_go_all(acked)
  for i, id in ipairs(acked) do
    local value = not ackedSizes[i] and (values and values[i] or redis.call('HGET', K.events, id))
    spool_less(id, ackedSizes[i] or (value and event_bytes(value)) or 0)
  end
  call_each('HDEL', K.events, acked, 1)
  call_each('HDEL', K.deliveries, acked, 1)
  -- handed out, stale, or waiting out a nack delay (acking it then still settles it)
  if call_each('ZREM', K.pending, acked, 1) < #acked then
    call_each('ZREM', K.stale, acked, 1)
    call_each('ZREM', K.scheduled, acked, 1)
  end
  -- most consumers hold no nack reasons, expiries or first hand-outs: one look instead of three calls
  if redis.call('EXISTS', K.reasons, K.expiry, K.first) > 0 then
    call_each('HDEL', K.reasons, acked, 1)
    call_each('ZREM', K.expiry, acked, 1)
    call_each('ZREM', K.first, acked, 1)
  end
  if uses_ttl() then call_each('ZREM', K.ttl, acked, 1) end
  -- the next event of each acked holder's key may go out
  if uses_ordering() then release_keys(acked, hmget(K.keyof, acked)) end
  remember(ACKED, ackedSeqs)
  acked_count = acked_count + #acked
  return statuses
end

local ids, entries, seqs, sizes = {}, {}, {}, {}
local m = tonumber(ARGV[2])
for i = 3, 4 * m + 2, 4 do
  table.insert(ids, ARGV[i])
  table.insert(entries, ARGV[i + 1])
  table.insert(seqs, tonumber(ARGV[i + 2]))
  sizes[#ids] = tonumber(ARGV[i + 3])
end
local budget = tonumber(ARGV[4 * m + 3])

-- the batches, read while fewer than budget deliveries were taken (as ack_each); a batch key
-- holds a batch record (batches.lib.lua), or an older version's ackIds
local batches, legacy = {}, {}
for k = EXTRA_KEY, #KEYS do
  if #ids >= budget then
    batches[k] = false
  else
    local first = #ids + 1
    local held = redis.call('GET', KEYS[k]) or ''
    local mark, batchIds, batchSeqs, batchNs, batchSizes = read_batch_record(held)
    if mark then
      for j, id in ipairs(batchIds) do
        local i = #ids + 1
        ids[i], entries[i] = id, batchNs[j] .. ':' .. batchSeqs[j] .. ':' .. mark .. batchSizes[j]
        seqs[i], sizes[i] = tonumber(batchSeqs[j]), tonumber(batchSizes[j])
      end
    else
      for ackId in string.gmatch(held, '%S+') do
        local id, seq, n, callMark = read_ack_id(cfg, ackId)
        legacy[#ids + 1] = ackId
        table.insert(ids, id or '')
        table.insert(entries, id and (n .. ':' .. seq .. ':' .. callMark) or '')
        table.insert(seqs, tonumber(seq or '0'))
      end
    end
    batches[k] = {first, #ids}
  end
end

local statuses = ack_all(ids, entries, seqs, sizes)
local result = settle_answer(statuses, m, batches, function(rows, i)
  table.insert(rows, legacy[i] or ids[i])
  table.insert(rows, legacy[i] and '' or entries[i])
  table.insert(rows, statuses[i])
end)
count({acked = acked_count})
write_memory()
-- room below maxUnacked: a poll held back by it may go on
if acked_count > 0 then wake_waiter(cfg) end
if acked_count > 0 and ARGV[4 * m + 4] == '1' then tell_windows(cfg, now) end
-- last, after the batches: the copies to release (see let_go)
table.insert(result, let_go_copies)
return result
