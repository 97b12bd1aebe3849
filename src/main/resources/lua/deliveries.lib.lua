-- Deliveries out: first hand-outs, lapses, and the scheduler's timed work.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- The first hand-out of an unacked event: kept in K.first, unless it is on its first delivery and
-- its deadline is as it was handed out (`deadline`): then its call's hand-out record tells it.
-- `current`: its deliveries entry, if read already.
local function first_handout(cfg, id, deadline, current)
  local kept = redis.call('ZSCORE', K.first, id)
  if kept then return kept end
  local _, _, mark = delivery_state(id, current)
  local record = mark and mark ~= '' and handout_record(mark)
  return (record and string.match(record, '^(%d+) ')) or string.format('%d', deadline - cfg.ackTimeoutMs)
end

-- When the oldest unacked event was first handed out, or -1 with none. K.first keeps the first
-- hand-outs that deadlines no longer tell (redeliveries, lapsed and extended deliveries); of the
-- other, first deliveries the earliest deadline tells the oldest (while ackTimeoutMs stays as they
-- were handed out with), looked for among the first FIRST_LOOK ones and read from its call's
-- hand-out record.
local FIRST_LOOK = 100
local function oldest_unacked(cfg)
  local oldest = tonumber(redis.call('ZRANGE', K.first, 0, 0, 'WITHSCORES')[2] or '-1')
  local earliest = redis.call('ZRANGE', K.pending, 0, FIRST_LOOK - 1, 'WITHSCORES')
  if #earliest == 0 then return oldest end
  local ids = {}
  for i = 1, #earliest, 2 do table.insert(ids, earliest[i]) end
  for i, kept in ipairs(redis.call('ZMSCORE', K.first, unpack(ids))) do
    if not kept then
      local handedOut = tonumber(first_handout(cfg, ids[i], tonumber(earliest[2 * i])))
      if oldest < 0 or handedOut < oldest then oldest = handedOut end
      break
    end
  end
  return oldest
end

-- Keeps an unacked event's first hand-out in K.first before its deadline stops telling it (it
-- lapses, or is extended).
local function keep_first(cfg, id, deadline, current)
  redis.call('ZADD', K.first, first_handout(cfg, id, deadline, current), id)
end

-- A delivery ended unacked at `at` (its deadline passed, or its socket closed): it becomes stale and
-- waits out its backoff from then, or expires at once if its time ran out meanwhile, or goes to the
-- dead-letter queue if another delivery would exceed maxDeliveries.
local function lapse(cfg, id, at, now)
  local ends, why = ends_at(cfg, id)
  -- read once: keep_first and note would each read it again
  local current = redis.call('HGET', K.deliveries, id) or nil
  local n, seq = delivery_state(id, current)
  n = tonumber(n or '1')
  if ends <= now then
    expire(cfg, id, why, now, seq, n)
  elseif cfg.maxDeliveries > 0 and n >= cfg.maxDeliveries and seq then
    note(id, 'X ' .. at, current)
    fail(cfg, id, seq, n, 'MAX_DELIVERIES', now)
  else
    keep_first(cfg, id, tonumber(redis.call('ZSCORE', K.pending, id)) or at, current)
    redis.call('ZADD', K.stale, at + backoff(cfg, n), id)
    redis.call('ZADD', K.expiry, ends, id)
    redis.call('ZREM', K.pending, id)
    note(id, 'X ' .. at, current)
  end
end

-- Deliveries whose deadline passed lapse (see lapse). Bounded by limit.
local function make_due_stale(cfg, now, limit)
  local due = redis.call('ZRANGEBYSCORE', K.pending, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #due, 2 do
    lapse(cfg, due[i], tonumber(due[i + 1]), now)
  end
end

-- Events whose time ran out expire (see expire): those in the expiry index, and the backlog from its
-- head by retention (arrival order is publish order; events with a TTL are in the index), dropping
-- the dead pairs there. Bounded by limit.
local function expire_due(cfg, now, limit)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', K.expiry, '-inf', now, 'LIMIT', 0, limit)) do
    local _, why = ends_at(cfg, id)
    expire(cfg, id, why, now)
  end
  local head = redis.call('LRANGE', K.backlog, 0, 2 * limit - 1)
  local ids = ids_of(head)
  local dead = dead_pairs(ids)
  local ended = 0
  for i, id in ipairs(ids) do
    if not dead[id] and retention_ends(cfg, id) > now then break end
    ended = i
  end
  if ended == 0 then return end
  redis.call('LPOP', K.backlog, 2 * ended)
  local dropped = {}
  for i = 1, ended do
    local id = ids[i]
    if dead[id] then
      table.insert(dropped, id)
    else
      local seq, stub = split_member(head[2 * i])
      -- a stub its pair kept goes with the event (the dead-letter queue keeps it in events)
      if stub then redis.call('HSETNX', K.events, id, stub) end
      expire(cfg, id, 'RETENTION', now, seq, 0)
    end
  end
  call_each('SREM', K.gone, dropped, 1)
end

-- When the consumer next has timed work: the earliest of the given times (nil ones skipped), the
-- backlog's oldest retention end, the expiry index's first entry and the first delay's end; -1 if
-- there is none.
local function next_due(cfg, ...)
  local next = -1
  local function consider(at)
    if at and (next < 0 or at < next) then next = at end
  end
  for i = 1, select('#', ...) do
    consider(select(i, ...))
  end
  local head = redis.call('LINDEX', K.backlog, 0)
  -- a dead pair at the head is work now: expire_due drops it
  consider(head and (dead_pairs({head})[head] and clock() or retention_ends(cfg, head)))
  consider(tonumber(redis.call('ZRANGE', K.expiry, 0, 0, 'WITHSCORES')[2]))
  consider(tonumber(redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')[2]))
  local forget = tonumber(redis.call('ZRANGE', K.forgets, 0, 0, 'WITHSCORES')[2])
  consider(forget and forget + FORGET_SLACK_MS)
  -- copies let go of by a script that could not hand them to its node
  if redis.call('LLEN', K.freed) > 0 then consider(clock()) end
  return next
end

-- The earliest pending deadline, and the earliest end after now of a stale delivery's backoff or
-- of a nack delay, for next_due.
local function next_redelivery(now)
  return tonumber(redis.call('ZRANGE', K.pending, 0, 0, 'WITHSCORES')[2]),
    tonumber(redis.call('ZRANGEBYSCORE', K.stale, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]),
    tonumber(redis.call('ZRANGEBYSCORE', K.scheduled, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2])
end

-- Whether a poll would get something now: a stale delivery whose backoff passed, or, while the
-- consumer is below maxUnacked, a requeued event whose delay passed or an event that may go out.
local function has_work(cfg, now)
  if #redis.call('ZRANGEBYSCORE', K.stale, '-inf', now, 'LIMIT', 0, 1) > 0 then return true end
  return redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.stale) < cfg.maxUnacked
    and (backlog_size() > 0
      or #redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', now, 'LIMIT', 0, 1) > 0
      -- ordering switched off: a poll lets the events behind their keys go (drain_lines)
      or (not cfg.ordering and uses_ordering() and redis.call('ZCARD', K.behind) > 0))
end
