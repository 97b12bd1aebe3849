-- Stubs and blobs, and the stored copies a consumer lets go of (docs/internals.md).
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- The key a stored event was published with (its blob's third member), or nil; an empty key is
-- none, as at publish (PendingPublish sends '' for both).
-- The shared layout (docs/internals.md): an events value that starts with a digit is a stub,
-- '<size>[@<copyId>][ <key>]', the event's bytes being in a stored copy; any other is the event's
-- blob itself (the inline layout; a blob starts with '"').
local function is_stub(value)
  return string.find(value, '^%d') ~= nil
end

-- The bytes an event counts for in quotas and batches: its blob's length.
local function event_bytes(value)
  if not is_stub(value) then return #value end
  return tonumber(string.match(value, '^%d+'))
end

-- The copy an eventId names: its first 26 characters (EventIds reserves a block per copy).
local function named_copy(id)
  return string.sub(id, 1, 26)
end

-- The copy holding a stub's event: the one its stub names, else the one its eventId names.
local function copy_of(id, stub)
  return string.match(stub, '^%d+@([^ ]+)') or named_copy(id)
end

-- The copies this call let go of: the consumer holds none of their events any more (see let_go).
-- A script that hands them to its node in its answer sets answers_let_go; for the others they go
-- to the freed list, which the scheduler's step releases (next_due makes it due now).
local let_go_copies, answers_let_go

-- The consumer no longer holds the event stored as `value` (its events value, read before it goes):
-- one event less of its copy, and when that was the last, the copy is the node's to release
-- (docs/internals.md, "Who frees what"). Nothing for an inline blob.
local function let_go_counted(counts)
  for copy, n in pairs(counts) do
    if redis.call('HINCRBY', K.copies, copy, -n) <= 0 then
      redis.call('HDEL', K.copies, copy)
      if answers_let_go then
        table.insert(let_go_copies, copy)
      else
        redis.call('RPUSH', K.freed, copy)
      end
    end
  end
end

local function let_go(id, value)
  if value and is_stub(value) then let_go_counted({[copy_of(id, value)] = 1}) end
end

-- let_go for each of these events, about to leave. Answers their events values when it read them,
-- nil when the consumer holds no copy (so nothing to let go: every event of it is inline).
local function let_go_all(ids)
  if redis.call('EXISTS', K.copies) == 0 then return nil end
  local values, counts = hmget(K.events, ids), {}
  for i, id in ipairs(ids) do
    local value = values[i]
    if value and is_stub(value) then
      local copy = copy_of(id, value)
      counts[copy] = (counts[copy] or 0) + 1
    end
  end
  let_go_counted(counts)
  return values
end

-- Up to `limit` copyIds filed for release, taken off the list: the caller releases them, or a
-- crash leaves them to their expiry (never early, docs/internals.md).
local function take_freed(limit)
  local ids = redis.call('LRANGE', K.freed, 0, limit - 1)
  if #ids > 0 then redis.call('LTRIM', K.freed, #ids, -1) end
  return ids
end

local function blob_key(blob)
  if is_stub(blob) then
    local key = string.match(blob, '^[^ ]* (.*)$')
    if key == '' then return nil end
    return key
  end
  local from = select(2, string.find(blob, '^"eventId":"[^"]*","topic":"[^"]*","key":'))
  if not from or string.sub(blob, from + 1, from + 1) ~= '"' then return nil end
  local at = from + 2
  while true do
    local c = string.sub(blob, at, at)
    if c == '\\' then
      at = at + 2
    elseif c == '"' or c == '' then
      break
    else
      at = at + 1
    end
  end
  local key = cjson.decode(string.sub(blob, from + 1, at))
  if key == '' then return nil end
  return key
end
