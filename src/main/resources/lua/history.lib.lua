-- An event's history and the hand-outs it tells of; withdraw ends a hand-out.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- An event's history: one entry per thing that happened to it, "<kind> <time> ..." (history.lua
-- reads them), kept while the event is held and HISTORY_AFTER_MS after it left. The common life of
-- an event — handed out once, acked — leaves nothing behind but its ack bit (remember): its
-- hand-out is told by the hand-out record of its poll call (memory field 'r:<mark>'), which every
-- delivery of that call shares, and its ack writes nothing. Anything else (nack, extend, deadline
-- passed, failure, redrive, a redelivery) goes to the event's list (memory field 'h:<eventId>'),
-- the hand-out entry first; the deliveries entry of an event whose list holds its current hand-out
-- ends with LISTED, so that its ack is noted there too.
local HISTORY_AFTER_MS = 600000
local LISTED = '+'

-- The record of one poll call's hand-outs, "<time> <deadline> <node> <via>", named by the call's
-- mark (the first 16 hex digits of a delivery's). Written once by its call and never changed: one
-- call reads each at most once (a scheduler step lapses up to a whole poll call's deliveries, which
-- share it). Only a delivery whose list does not hold its hand-out needs it, and only until it
-- lapses (its list then does): kept past the deadline HANDOUT_AFTER_MS, the time a late scheduler
-- may take. Without it a lapse still tells the first hand-out by the deadline (see first_handout);
-- the history loses the node and connection kind of that hand-out.
local HANDOUT_AFTER_MS = 600000
local handout_records
local function handout_record(mark)
  local call = string.sub(mark, 1, 16)
  local record = handout_records[call]
  if record == nil then
    record = redis.call('HGET', K.memory, 'r:' .. call) or false
    handout_records[call] = record
  end
  return record or nil
end

-- The entries of a list as stored: "<length> <entry>" one after the other.
local function parse_history(held)
  local entries, at = {}, 1
  while at <= #held do
    local space = string.find(held, ' ', at, true)
    local length = space and tonumber(string.sub(held, at, space - 1))
    -- never written so: what was read up to here is all there is
    if not length then break end
    table.insert(entries, string.sub(held, space + 1, space + length))
    at = space + length + 1
  end
  return entries
end

local function history_item(entry)
  return #entry .. ' ' .. entry
end

-- An event's list is bounded, so that no client's repeated nacks or extends make every call on
-- the event read and write a field without end: past HISTORY_MAX_BYTES it keeps its first hand-out
-- and that hand-out's outcome, then "T <now> <how many entries went>", then the latest entries
-- within half the bound (so that it is trimmed once per many appends, not at each).
local HISTORY_MAX_BYTES = 16384
local OUTCOME_KINDS = {A = true, X = true, N = true, F = true}

local function trimmed_history(held)
  local entries = parse_history(held)
  if #entries < 3 then return held end
  local head = {history_item(entries[1])}
  local from = 2
  -- the first hand-out's outcome, after the extensions it may have had (they go)
  while entries[from] and string.sub(entries[from], 1, 1) == 'E' do from = from + 1 end
  if entries[from] and OUTCOME_KINDS[string.sub(entries[from], 1, 1)] then
    table.insert(head, history_item(entries[from]))
    from = from + 1
  end
  local extensions = from - 2 - (#head - 1)
  local dropped = extensions
  local went = string.match(entries[from] or '', '^T %d+ (%d+)$')
  if went then
    dropped, from = dropped + tonumber(went), from + 1
  end
  local budget, kept, i = HISTORY_MAX_BYTES / 2, {}, #entries
  while i >= from and (#kept == 0 or budget >= #entries[i] + 8) do
    budget = budget - #entries[i] - 8
    table.insert(kept, 1, history_item(entries[i]))
    i = i - 1
  end
  dropped = dropped + (i - from + 1)
  return table.concat(head) .. history_item('T ' .. string.format('%d', clock()) .. ' ' .. dropped)
    .. table.concat(kept)
end

-- Appends entries to the event's list, kept keepMs from now. A list is one memory field, its
-- entries "<length> <entry>" one after the other, so that an entry may hold any text (a nack's
-- reason).
local function append_history(id, keepMs, ...)
  local field = 'h:' .. id
  local parts = {redis.call('HGET', K.memory, field) or ''}
  for i = 1, select('#', ...) do
    parts[i + 1] = history_item(select(i, ...))
  end
  local held = table.concat(parts)
  if #held > HISTORY_MAX_BYTES then held = trimmed_history(held) end
  redis.call('HSET', K.memory, field, held)
  keep(field, keepMs)
end

-- Appends entries to the event's list, kept after anything the consumer can hold the event (a stay
-- in a queue lasts a retention at most, and every change notes an entry).
local function push_history(id, ...)
  append_history(id, held_history_ms, ...)
end

-- The entries of the event's list, oldest first.
local function history_entries(id)
  return parse_history(redis.call('HGET', K.memory, 'h:' .. id) or '')
end

-- Delivery count, arrival sequence, the latest delivery's mark, (while it waits out a nack delay)
-- first hand-out time, as strings, and whether the event's list holds its current hand-out (or an
-- older version's entry still carries it after '|'), of a handed-out event; nil if it is not.
-- `entry`: its deliveries entry ("n:seq:mark", then ":firstHandOut" while it waits out a nack
-- delay, then LISTED; a mark is 16 hex digits and the event's size), if read already. Entries written before delivery
-- marks ("n:seq" or "n:seq:firstHandOut") have mark ''.
local function delivery_state(id, entry)
  local v = entry or redis.call('HGET', K.deliveries, id)
  if not v then return nil end
  local n, seq, rest = string.match(v, '^(%d+):(%d+):?([^|+]*)')
  if not n then return nil end
  local listed = string.find(v, '[|+]') ~= nil
  local first, second = string.match(rest, '^([^:]*):?(.*)$')
  if #first >= 16 then return n, seq, first, second, listed end
  return n, seq, '', first, listed
end

-- The history entry of the hand-out a deliveries entry (nil for none) names, when the event's list
-- does not hold it: an older version's entry carries it after '|', else its call's record tells
-- it; nil when it is listed, or has no record (an entry an older version had moved to the list
-- already, or one older than any delivery's record lives).
local function handout_entry(entry)
  local legacy = string.match(entry or '', '|(.*)$')
  if legacy then return legacy end
  local n, _, mark, _, listed = delivery_state(nil, entry or '')
  if not n or listed or mark == '' then return nil end
  local at, deadline, recipient = string.match(handout_record(mark) or '', '^(%S+) (%S+) (.*)$')
  if not at then return nil end
  return 'D ' .. at .. ' ' .. n .. ' ' .. deadline .. ' ' .. recipient .. ' ' .. string.sub(mark, 1, 16)
end

-- The entry of the event's current hand-out when its list does not hold it yet, else nil; from
-- then on its deliveries entry says LISTED, so the caller must write the entry to the list.
-- `current`: its deliveries entry, if read already.
local function take_handout(id, current)
  local v = current or redis.call('HGET', K.deliveries, id)
  if not v or string.find(v, LISTED, 1, true) then return nil end
  redis.call('HSET', K.deliveries, id, (string.match(v, '^([^|]*)|') or v) .. LISTED)
  return handout_entry(v)
end

-- Moves the current hand-out's entry to the event's list, if it is not there yet.
local function flush_handout(id)
  local handout = take_handout(id)
  if handout then push_history(id, handout) end
end

-- Notes an entry in the event's list (its current hand-out's first, if the list does not hold it
-- yet), the list kept keepMs from now.
local function note_kept(id, keepMs, entry, current)
  local handout = take_handout(id, current)
  if handout then
    append_history(id, keepMs, handout, entry)
  else
    append_history(id, keepMs, entry)
  end
end

local function note(id, entry, current)
  note_kept(id, held_history_ms, entry, current)
end

-- Notes the ack of an event whose list holds its current hand-out (delivery_state's listed); the
-- list lives HISTORY_AFTER_MS more.
local function note_ack(id, now)
  note_kept(id, HISTORY_AFTER_MS, 'A ' .. now)
end

-- The eventId of the delivery an ackId names, when it is its event's latest and still pending (not
-- acked, nacked, lapsed or handed out again); else nil. For ackIds the node itself kept (a socket's
-- deliveries), so their tokens are not checked again.
local function is_out(ackId)
  local id, seq, n, mark = string.match(ackId, ACK_ID)
  if not id then return nil end
  local current, currentSeq, currentMark = delivery_state(id)
  if current == n and currentSeq == seq and currentMark == mark and redis.call('ZSCORE', K.pending, id) then
    return id
  end
  return nil
end

-- Takes an event out of circulation (handed out, stale or waiting out a nack delay).
local function withdraw(id)
  flush_handout(id)
  redis.call('ZREM', K.pending, id)
  redis.call('ZREM', K.stale, id)
  redis.call('ZREM', K.scheduled, id)
  redis.call('ZREM', K.first, id)
  redis.call('HDEL', K.deliveries, id)
  redis.call('HDEL', K.reasons, id)
end
