-- The backlog: arrivals in order, dead pairs, taking from the head, giving back, forgetting.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- The backlog is a list of (eventId, arrival sequence) pairs: appending and taking from the head
-- cost a fraction of a sorted set's (and a third of its memory), but nothing can leave from the
-- middle. An event that does (its TTL ran out, or it was taken back) has its eventId put in K.gone:
-- its pair is dead, skipped and dropped when it reaches the head. For each eventId the list holds
-- at most one pair: an event whose dead pair is still there, spooled or redriven again, takes that
-- pair back instead (leaving K.gone), so a dead pair never stands for a later life of its event.
local gone_in_use
local function uses_gone()
  if gone_in_use == nil then gone_in_use = redis.call('EXISTS', K.gone) == 1 end
  return gone_in_use
end

-- A pair's second member: the event's arrival sequence, and, in the packed layout, the stub of an
-- event that has no events entry while it waits, "<seq>:<stub>" (docs/internals.md, "Stubs in the
-- backlog"). An events entry, when the event has one, is its stub all the same: a dead pair taken
-- back (see enter_backlog) may carry an earlier life's.
local function pair_member(seq, stub)
  if stub then return seq .. ':' .. stub end
  return seq
end

-- A pair's second member as its arrival sequence (a string) and its stub (nil for none).
local function split_member(member)
  local colon = string.find(member, ':', 1, true)
  if not colon then return member, nil end
  return string.sub(member, 1, colon - 1), string.sub(member, colon + 1)
end

-- The eventIds of a list of backlog pairs (eventId, seq, eventId, seq, ...).
local function ids_of(arrivals)
  local ids = {}
  for i = 1, #arrivals, 2 do
    ids[(i + 1) / 2] = arrivals[i]
  end
  return ids
end

-- Of these eventIds, a table of those whose backlog pair is dead.
local function dead_pairs(ids)
  local dead = {}
  if #ids == 0 or not uses_gone() then return dead end
  local i = 0
  for _, flags in ipairs(in_pieces(ids, 1, function(...) return redis.call('SMISMEMBER', K.gone, ...) end)) do
    for _, flag in ipairs(flags) do
      i = i + 1
      if flag == 1 then dead[ids[i]] = true end
    end
  end
  return dead
end

-- How many events may go out now: the backlog's live pairs, and those whose turn came.
local function backlog_size()
  local size = redis.call('LLEN', K.backlog) / 2
  if size > 0 and uses_gone() then size = size - redis.call('SCARD', K.gone) end
  if uses_ordering() then size = size + redis.call('ZCARD', K.ready) end
  return size
end

-- The stub an event waiting in the backlog keeps in its live pair, or nil. Looked for only when the
-- consumer holds the copy the eventId names (a stub kept in a pair never names another), from the
-- backlog's tail (where the events a take-back looks for are): the one search of the list by eventId.
local function pair_stub(id)
  if redis.call('HEXISTS', K.copies, named_copy(id)) == 0 or dead_pairs({id})[id] then return nil end
  -- a sequence member never equals an eventId (it holds a ':' or only digits)
  local at = redis.call('LPOS', K.backlog, id, 'RANK', -1)
  if not at then return nil end
  return select(2, split_member(redis.call('LINDEX', K.backlog, at + 1)))
end

-- Whether the event is in the backlog: spooled, not handed out since it came (back) (nor in the
-- sets of handed-out events: an older version's entry may lack its deliveries entry), not in the
-- dead-letter or error queue, not waiting out its delay, its pair not dead. Also answers the stub
-- of one that keeps it in its pair.
local function in_backlog(id)
  if redis.call('HEXISTS', K.events, id) == 0 then
    local stub = pair_stub(id)
    return stub ~= nil, stub
  end
  return redis.call('HEXISTS', K.deliveries, id) == 0
    and not (redis.call('ZSCORE', K.pending, id) or redis.call('ZSCORE', K.stale, id)
      or redis.call('ZSCORE', K.scheduled, id) or redis.call('ZSCORE', K.delayed, id))
    and redis.call('HEXISTS', K.failures, id) == 0
    -- one waiting for its turn may have a dead pair from an earlier stay in the backlog
    and (not dead_pairs({id})[id] or waits_for_turn(id))
end

-- The event, in the backlog, leaves it from the middle: its pair is dead from now on.
local function leave_backlog(id)
  redis.call('SADD', K.gone, id)
  gone_in_use = true
end

-- An event spooled and not handed out leaves the queue from its middle (its time ran out, or it is
-- taken back): from its delay or from K.ready, or its backlog pair is dead from now on; one behind
-- its key's holder leaves its line by release_keys.
local function leave_queue(id)
  if redis.call('ZREM', K.delayed, id) == 1 then return end
  if uses_ordering() and redis.call('ZREM', K.ready, id) == 1 then return end
  if not waits_for_turn(id) then leave_backlog(id) end
end

-- Appends events to the backlog: arrivals {eventId, seq, eventId, seq, ...}. An event whose dead
-- pair is still there takes it back instead (see above).
local function enter_backlog(arrivals)
  if uses_gone() then
    local dead = dead_pairs(ids_of(arrivals))
    if next(dead) then
      local fresh, back = {}, {}
      for i = 1, #arrivals, 2 do
        if dead[arrivals[i]] then
          table.insert(back, arrivals[i])
        else
          table.insert(fresh, arrivals[i])
          table.insert(fresh, arrivals[i + 1])
        end
      end
      call_each('SREM', K.gone, back, 1)
      arrivals = fresh
    end
  end
  call_each('RPUSH', K.backlog, arrivals, 2)
end

-- Delayed events whose time has come enter the backlog's end, each with a new arrival sequence
-- (their place in the arrival order is now); one behind its key's holder waits on for its turn.
-- Bounded by limit.
local function release_delayed(now, limit)
  local due = redis.call('ZRANGEBYSCORE', K.delayed, '-inf', now, 'LIMIT', 0, limit)
  if #due == 0 then return end
  call_each('ZREM', K.delayed, due, 1)
  if uses_ordering() then
    local going = {}
    for _, id in ipairs(due) do
      if not waits_for_turn(id) then table.insert(going, id) end
    end
    due = going
  end
  local seq = redis.call('HINCRBY', K.meta, 'seq', #due) - #due
  local arrivals = {}
  for i, id in ipairs(due) do
    arrivals[2 * i - 1], arrivals[2 * i] = id, string.format('%d', seq + i)
  end
  enter_backlog(arrivals)
end

-- Dead pairs a call drops beyond the events it takes, about: bounds the call (a run of dead pairs
-- longer than this is dropped by the calls after it, see dropped_dead).
local DEAD_PAIRS_PER_CALL = 4000
-- Whether this call dropped dead pairs (then more events may wait behind the ones it left).
local dropped_dead

-- Takes up to n events from the backlog's head, dropping the dead pairs before and among them:
-- their eventIds, seqs (strings) and the stubs their pairs kept (nil for none), in arrival order.
local function take_backlog(n)
  local ids, seqs, stubs = {}, {}, {}
  if not uses_gone() then
    local popped = redis.call('LPOP', K.backlog, 2 * n) or {}
    for i = 1, #popped, 2 do
      local k = (i + 1) / 2
      ids[k] = popped[i]
      seqs[k], stubs[k] = split_member(popped[i + 1])
    end
    return ids, seqs, stubs
  end
  -- dead pairs about: look first (in growing pieces), then take what was looked at up to the
  -- n-th live pair
  local looked, dropped = 0, {}
  while #ids < n and #dropped < DEAD_PAIRS_PER_CALL do
    local size = math.max(n - #ids, #dropped)
    local piece = redis.call('LRANGE', K.backlog, 2 * looked, 2 * (looked + size) - 1)
    local pieceIds = ids_of(piece)
    local dead = dead_pairs(pieceIds)
    for i, id in ipairs(pieceIds) do
      if #ids == n then break end
      looked = looked + 1
      if dead[id] then
        table.insert(dropped, id)
      else
        local k = #ids + 1
        ids[k] = id
        seqs[k], stubs[k] = split_member(piece[2 * i])
      end
    end
    if #piece < 2 * size then break end
  end
  if looked > 0 then redis.call('LPOP', K.backlog, 2 * looked) end
  call_each('SREM', K.gone, dropped, 1)
  if #dropped > 0 then dropped_dead = true end
  return ids, seqs, stubs
end

-- Takes up to n events that may go out now, oldest arrival first: from the backlog's head and from
-- K.ready (events whose turn came); those of the backlog not taken go back to its head. Returns
-- their eventIds and seqs, the set of those taken from K.ready (nil for none), and the stubs their
-- pairs kept (see take_backlog).
local function take_new(n)
  local ready = uses_ordering() and redis.call('ZRANGE', K.ready, 0, n - 1, 'WITHSCORES') or {}
  local ids, seqs, stubs = take_backlog(n)
  if #ready == 0 then return ids, seqs, nil, stubs end
  local takenIds, takenSeqs, takenStubs, fromReady = {}, {}, {}, {}
  local r, b = 1, 1
  while #takenIds < n and (r < #ready or b <= #ids) do
    local k = #takenIds + 1
    if b > #ids or (r < #ready and tonumber(ready[r + 1]) < tonumber(seqs[b])) then
      takenIds[k], takenSeqs[k] = ready[r], ready[r + 1]
      table.insert(fromReady, ready[r])
      r = r + 2
    else
      takenIds[k], takenSeqs[k], takenStubs[k] = ids[b], seqs[b], stubs[b]
      b = b + 1
    end
  end
  call_each('ZREM', K.ready, fromReady, 1)
  local back, readySet = {}, {}
  for i = #ids, b, -1 do
    table.insert(back, pair_member(seqs[i], stubs[i]))
    table.insert(back, ids[i])
  end
  call_each('LPUSH', K.backlog, back, 2)
  for _, id in ipairs(fromReady) do readySet[id] = true end
  return takenIds, takenSeqs, readySet, takenStubs
end

-- Puts what take_new took from the `from`-th on back where it was (fromReady and stubs: its third
-- and fourth answers), as if it had not been taken.
local function give_back(ids, seqs, from, fromReady, stubs)
  local back, ready = {}, {}
  for i = #ids, from, -1 do
    if fromReady and fromReady[ids[i]] then
      table.insert(ready, seqs[i])
      table.insert(ready, ids[i])
    else
      table.insert(back, pair_member(seqs[i], stubs[i]))
      table.insert(back, ids[i])
    end
  end
  call_each('LPUSH', K.backlog, back, 2)
  call_each('ZADD', K.ready, ready, 2)
end

-- Removes an event from every structure of the consumer; returns the bytes it held. stub: the one
-- its backlog pair kept (see in_backlog), for one without an events entry.
local function forget(id, stub)
  if uses_ordering() then
    redis.call('ZREM', K.ready, id)
    release_key(id)
  end
  local value = redis.call('HGET', K.events, id) or stub
  local bytes = value and event_bytes(value) or 0
  let_go(id, value)
  redis.call('HDEL', K.events, id)
  withdraw(id)
  redis.call('ZREM', K.expiry, id)
  redis.call('ZREM', K.dead, id)
  redis.call('ZREM', K.errors, id)
  redis.call('HDEL', K.failures, id)
  redis.call('ZREM', K.ttl, id)
  redis.call('ZREM', K.delayed, id)
  -- its list (if it has one) is kept HISTORY_AFTER_MS more
  redis.call('ZADD', K.forgets, 'XX', string.format('%d', clock() + HISTORY_AFTER_MS), 'h:' .. id)
  return bytes
end
