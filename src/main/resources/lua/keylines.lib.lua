-- Ordering by key: the lines of events behind their keys' holders.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- Per-key ordering. The events of one key form a line in arrival order, from the moment they are
-- spooled for a consumer whose ordering is "key" (key_joins): its first, the holder, is in the queue
-- like any event (backlog, delayed, handed out, stale, waiting out a nack delay); the others wait in
-- K.behind, where no poll looks. When the holder leaves the queue (acked, dead-lettered, rejected,
-- dropped, expired, taken back: release_keys) the next in line holds the key and goes to K.ready, or
-- stays delayed until its time. So at most one event of a key is out, whoever asks. A line is
-- reached by its key alone: each call costs O(log n) however long the lines are.
local ordering_in_use
-- Whether this call passed a key on to an event that may go out now (a parked poll may take it).
local keys_passed
local function uses_ordering()
  if ordering_in_use == nil then ordering_in_use = redis.call('EXISTS', K.keyof, K.ready) > 0 end
  return ordering_in_use
end

-- A line's places all begin with its key and the key's length in bytes (4 digits: a key is at most
-- 256 characters), so that no other line's places begin the same way; then the arrival sequence in
-- 16 digits, so that they sort in arrival order; then the eventId.
local function line_of(key)
  return string.format('%04d', #key) .. key
end

local function key_place(key, seq, id)
  return line_of(key) .. string.format('%016d', seq) .. id
end

-- The key, arrival sequence (a string) and eventId of a place.
local function place_parts(place)
  local length = tonumber(string.sub(place, 1, 4))
  return string.sub(place, 5, 4 + length), string.sub(place, 5 + length, 20 + length), string.sub(place, 21 + length)
end

-- Events joining the ends of their keys' lines, for one call (a publish round, a redrive): keys are
-- all the keys they may have, each key's holder read once. join(key, seq, id) returns true when the
-- event holds its key (its line was empty) and goes into the queue as any event, false when it
-- waits behind; write() then writes the joins, one variadic command per structure.
local function key_joins(keys)
  local held, distinct = {}, {}
  for _, key in ipairs(keys) do
    if held[key] == nil then
      held[key] = false
      table.insert(distinct, key)
    end
  end
  for i, holder in ipairs(hmget(K.holders, distinct)) do
    held[distinct[i]] = holder and true or false
  end
  local places, holders, behind = {}, {}, {}
  return {
    join = function(key, seq, id)
      local place = key_place(key, tonumber(seq), id)
      local n = #places
      places[n + 1], places[n + 2] = id, place
      if not held[key] then
        held[key] = true
        n = #holders
        holders[n + 1], holders[n + 2] = key, id
        return true
      end
      n = #behind
      behind[n + 1], behind[n + 2] = 0, place
      return false
    end,
    write = function()
      if #places == 0 then return end
      call_each('HSET', K.keyof, places, 2)
      call_each('HSET', K.holders, holders, 2)
      call_each('ZADD', K.behind, behind, 2)
      ordering_in_use = true
    end,
  }
end

-- Events left the queue for good (places[i]: ids[i]'s K.keyof entry, false for none): they leave
-- their keys' lines, and where one held its key the next in line holds it and may go out (K.ready),
-- or goes when its delay ends (release_delayed); with none left the key is free. One variadic
-- command per structure, and a look into the line of each key passed on.
local function release_keys(ids, places)
  local released, keys, holding = {}, {}, {}
  for i, place in ipairs(places) do
    if place then
      local k = #released + 1
      released[k], keys[k], holding[k] = ids[i], (place_parts(place)), place
    end
  end
  if #released == 0 then return end
  call_each('HDEL', K.keyof, released, 1)
  local holders = hmget(K.holders, keys)
  -- those waiting behind leave first, so that none of them is passed a key below
  local left = {}
  for k, id in ipairs(released) do
    if holders[k] ~= id then table.insert(left, holding[k]) end
  end
  call_each('ZREM', K.behind, left, 1)
  left = {}
  local passed, free, ready = {}, {}, {}
  local delays = redis.call('EXISTS', K.delayed) == 1
  for k, id in ipairs(released) do
    if holders[k] == id then
      local line = line_of(keys[k])
      -- after a line's prefix come the sequence's digits, all below ':'
      local next = redis.call('ZRANGEBYLEX', K.behind, '[' .. line, '(' .. line .. ':', 'LIMIT', 0, 1)[1]
      if next then
        local _, seq, nextId = place_parts(next)
        table.insert(left, next)
        table.insert(passed, keys[k])
        table.insert(passed, nextId)
        if not (delays and redis.call('ZSCORE', K.delayed, nextId)) then
          table.insert(ready, seq)
          table.insert(ready, nextId)
        end
      else
        table.insert(free, keys[k])
      end
    end
  end
  call_each('ZREM', K.behind, left, 1)
  call_each('HSET', K.holders, passed, 2)
  call_each('HDEL', K.holders, free, 1)
  call_each('ZADD', K.ready, ready, 2)
  if #ready > 0 then keys_passed = true end
end

-- release_keys for one event. place: its K.keyof entry when read already.
local function release_key(id, place)
  if not uses_ordering() then return end
  release_keys({id}, {place or redis.call('HGET', K.keyof, id)})
end

-- The eventId of the holder an event waits behind (its turn has not come), else nil.
local function holder_ahead(id)
  if not uses_ordering() then return nil end
  local place = redis.call('HGET', K.keyof, id)
  local holder = place and redis.call('HGET', K.holders, (place_parts(place)))
  if holder and holder ~= id then return holder end
  return nil
end

-- Whether the event, spooled and not handed out, is not in the backlog's list but waits its turn:
-- behind its key's holder, or in K.ready.
local function waits_for_turn(id)
  if not uses_ordering() then return false end
  if redis.call('ZSCORE', K.ready, id) then return true end
  return holder_ahead(id) ~= nil
end

-- With ordering switched off, the events still waiting behind a holder leave their lines, a bounded
-- number per call (in line order: a key's in arrival order): to K.ready, or they stay delayed.
local function drain_lines(limit)
  local places = redis.call('ZRANGE', K.behind, 0, limit - 1)
  if #places == 0 then return end
  call_each('ZREM', K.behind, places, 1)
  local ids, ready = {}, {}
  for i, place in ipairs(places) do
    local _, seq, id = place_parts(place)
    ids[i] = id
    if not redis.call('ZSCORE', K.delayed, id) then
      table.insert(ready, seq)
      table.insert(ready, id)
    end
  end
  call_each('HDEL', K.keyof, ids, 1)
  call_each('ZADD', K.ready, ready, 2)
end
