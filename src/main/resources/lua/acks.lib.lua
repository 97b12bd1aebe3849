-- What the consumer remembers of acks and drops, and what a settle answers.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- Acks (and drops) are remembered in segments of MEMORY_BITS arrival sequences: memory fields
-- '<kind>:<salt>:<k>' (kind ACKED or DROPPED, salt memory_salt, k the segment's number; 'a:<k>' and
-- 'd:<k>' in the description of KEYS[26] for short), each a bitmap with its first
-- sequence in the high bit of its first byte, kept ACKED_MEMORY_MS after its last change. Redis
-- cannot set a bit inside a hash field, so a call gathers its changes here (field -> {held = the
-- stored bitmap, set = {[byte] = bits to set}, changed}) and write_memory writes them at its end.
local segments

local function memory_segment(kind, k)
  local field = kind .. ':' .. memory_salt .. ':' .. k
  local segment = segments[field]
  if not segment then
    segment = {held = redis.call('HGET', K.memory, field) or '', set = {}}
    segments[field] = segment
  end
  return segment
end

-- Remembers arrival sequences (a list of numbers) of one kind. Call write_memory() once at the
-- end of the script.
local function remember(kind, seqs)
  local k, segment
  for _, seq in ipairs(seqs) do
    local offset = seq % MEMORY_BITS
    if seq - offset ~= k then
      k = seq - offset
      segment = memory_segment(kind, k / MEMORY_BITS)
      segment.changed = true
    end
    local byte = (offset - offset % 8) / 8 + 1
    segment.set[byte] = bit.bor(segment.set[byte] or 0, bit.rshift(128, offset % 8))
  end
end

local function remember_ack(seq)
  remember(ACKED, {seq})
end

local function remembers(kind, seq)
  local offset = seq % MEMORY_BITS
  local segment = memory_segment(kind, (seq - offset) / MEMORY_BITS)
  local byte = (offset - offset % 8) / 8 + 1
  local bits = bit.bor(string.byte(segment.held, byte) or 0, segment.set[byte] or 0)
  return bit.band(bits, bit.rshift(128, offset % 8)) ~= 0
end

-- Writes the memory segments this call changed, each kept ACKED_MEMORY_MS from now.
local function write_memory()
  local fields, ends = {}, {}
  for field, segment in pairs(segments) do
    if segment.changed then
      local bytes = {string.byte(segment.held, 1, -1)}
      local held, top = #bytes, #bytes
      for byte in pairs(segment.set) do
        if byte > top then top = byte end
      end
      for byte = held + 1, top do
        bytes[byte] = 0
      end
      for byte, bits in pairs(segment.set) do
        bytes[byte] = bit.bor(bytes[byte], bits)
      end
      table.insert(fields, field)
      table.insert(fields, string.char(unpack(bytes, 1, top)))
      table.insert(ends, string.format('%d', clock() + ACKED_MEMORY_MS))
      table.insert(ends, field)
    end
  end
  if #fields == 0 then return end
  redis.call('HSET', K.memory, unpack(fields))
  redis.call('ZADD', K.forgets, unpack(ends))
end

local function was_acked(seq)
  return remembers(ACKED, seq)
end

-- What an ackId of an event whose ack bit is set is answered: ALREADY_ACKED for the delivery that
-- was acked, EXPIRED for an earlier one, DEAD_LETTERED when none was (it was acked from a failure
-- queue). n, mark: the ackId's. The event's list tells: its hand-out entries end with their poll
-- call's mark, a listed delivery's ack notes 'A' after its hand-out, and the only deliveries not
-- listed are an event's first hand-out and the first after a redrive ('R'), both number 1. Where
-- the list cannot tell (it was trimmed past the delivery, or outlived, 10 minutes after the event
-- left, or its entries are older than marks), a delivery 1 is taken for the acked one.
local function acked_status(id, n, mark)
  local call = string.sub(mark, 1, 16)
  if #call < 16 then return 'ALREADY_ACKED' end
  -- ackedBy: the mark of the hand-out an 'A' followed ('F' for a failure queue's ack, '' unknown);
  -- last: the kind of the latest hand-out, redrive, failure or trim
  local ackedBy, current, last, listed = nil, '', nil, false
  for _, entry in ipairs(history_entries(id)) do
    local kind = string.sub(entry, 1, 1)
    if kind == 'D' then
      current = string.match(entry, ' (%x+)$') or ''
      if #current ~= 16 then current = '' end
      if current == call then listed = true end
      ackedBy, last = nil, 'D'
    elseif kind == 'R' or kind == 'T' then
      current, ackedBy, last = '', nil, kind
    elseif kind == 'F' then
      current, ackedBy, last = 'F', nil, 'F'
    elseif kind == 'A' then
      ackedBy = current
    end
  end
  if ackedBy == 'F' then return 'DEAD_LETTERED' end
  if ackedBy and ackedBy ~= '' then return ackedBy == call and 'ALREADY_ACKED' or 'EXPIRED' end
  -- acked without an entry: an unlisted delivery (first, or first after a redrive), unless the
  -- list says this one was handed out before
  if listed then return 'EXPIRED' end
  if last == 'R' then return n == '1' and 'ALREADY_ACKED' or 'EXPIRED' end
  return 'ALREADY_ACKED'
end

-- What an ack, nack or extend of an event that is no longer handed out finds: it left for the
-- dead-letter or error queue (or was dropped instead), it was acked (see acked_status), or nothing
-- is known of it. n, mark: the ackId's.
local function settled_status(id, seq, n, mark)
  if redis.call('ZSCORE', K.dead, id) or redis.call('ZSCORE', K.errors, id) or remembers(DROPPED, seq) then
    return 'DEAD_LETTERED'
  end
  if was_acked(seq) then return acked_status(id, n, mark) end
  return 'UNKNOWN'
end
