-- Spools one publish round's events for one consumer.
-- KEYS[EXTRA_KEY] idempotent ZSET eventId -> when it was spooled, for the events published with an
--                 idempotencyKey during the last dedup window
-- ARGV[1] the ledger hold of this consumer's part of the round ('' for none)
-- ARGV[2] the dedup window in ms (publish.idempotencyWindowMs)
-- ARGV[3] the room held for the round in the consumer's own quota (own_hold.lua), '' for none: this
--         call takes it, so that its events fit
-- ARGV[4..] septuples of eventId, blob (or in the shared layout its stub, '<size>[@<copyId>]',
-- the bytes being in a stored copy: docs/internals.md), ttlMs ('' for none), the event's topic when it counts
-- against that topic's quota ('' otherwise), flags, the time before which it may not be handed
-- out ('' for none; one in the past means now), and its key ('' for none). Flags: K when it was published with an
-- idempotencyKey (such an event is spooled at most once for this consumer within the window,
-- whatever became of it since — acked, dead-lettered, dropped — so a retry of a publish whose
-- outcome was unknown never hands the consumer an event it already had), F when no quota may
-- refuse it (the gateway's own alerts), P when the node spools in the packed layout: a stub that
-- names the eventId's copy, of an event that goes straight into the backlog with no TTL to index,
-- is kept in its backlog pair rather than in events (docs/internals.md, "Stubs in the backlog").
-- A delayed event waits in K.delayed, and its end of time with the consumer (TTL or retention) is
-- in the expiry index: it enters the backlog at its end when its time comes, out of publish order.
-- With ordering "key", an event with a key joins its key's line (key_joins): the first holds the
-- key and goes into the queue, the others wait behind it, their ends in the expiry index too.
-- Returns {events spooled, the earliest time among them the scheduler must know (a TTL end that is
-- the consumer's earliest expiry, or a delay's end) else -1, 1 when it refuses events for all (rejectPublishWhenRefused)
-- else 0, its retentionMs, the number r of events it did not take for its quota, then r eventIds, then (with a hold)
-- the spool's figures for the ledger (spool_figures)}; -1 when the consumer does not exist; -2 when it
-- is disabled and refuses events for all (rejectPublishWhenRefused), -3 when it is disabled and
-- skips them (counted as discarded): the node's copy of its settings was behind.
-- An event that would take the consumer over its own quotaBytes or quotaEvents (checked here,
-- exactly, against its spooledBytes and spooledEvents) is refused (with rejectPublishWhenRefused)
-- or skipped and counted as discarded.
local cfg = settings()
if not cfg then return -1 end
-- the room held for this round is this call's to take, whatever it does (own_quota counts what is
-- still held)
if ARGV[3] ~= '' then release_own_holds({'q:' .. ARGV[3]}) end
local events = (#ARGV - 3) / 7
-- the copies the call's stubs name: each one this consumer takes none of is let go of at once
local named = {}
for i = 5, #ARGV, 7 do
  if is_stub(ARGV[i]) then named[copy_of(ARGV[i - 1], ARGV[i])] = true end
end
local function let_go_untaken()
  local untaken = {}
  for copy in pairs(named) do
    if redis.call('HEXISTS', K.copies, copy) == 0 then table.insert(untaken, copy) end
  end
  call_each('RPUSH', K.freed, untaken, 1)
  return #untaken
end
if not cfg.enabled then
  let_go_untaken()
  if cfg.refusesForAll then return -2 end
  count({discarded = events})
  return -3
end
local quota = own_quota(cfg)
local idempotent = KEYS[EXTRA_KEY]
local seq = redis.call('HINCRBY', K.meta, 'seq', events) - events
local spooled, earliest, discarded = 0, -1, 0
local refused = {}
local keyedAt
-- what the spooled events write, gathered for one variadic command each (see call_each)
local blobs, backlog, keyed, charged, topicBytes, ttls = {}, {}, {}, {}, {}, {}
-- the earliest delay's end, or retention end put in the index (delayed events, and those waiting
-- behind their key): the scheduler must know it
local delayed, indexedEnds, firstIndexed = {}, {}, nil
local queued, stored = 0, 0
local now
local ids = {}
for i = 4, #ARGV, 7 do
  ids[(i + 3) / 7] = ARGV[i]
end
-- the round's keys, for their lines (ordering by key)
local lines
if cfg.ordering then
  local keys = {}
  for i = 10, #ARGV, 7 do
    if ARGV[i] ~= '' then table.insert(keys, ARGV[i]) end
  end
  lines = key_joins(keys)
end
-- a repeated eventId (a round spooled again after its outcome was unknown) is spooled once; a packed
-- event has no events entry, so only the node, which never sends a spool call twice, guards it
-- (docs/internals.md, "Stubs in the backlog")
local held = {}
for i, blob in ipairs(hmget(K.events, ids)) do
  if blob then held[ids[i]] = true end
end
local taken = {}
for i = 4, #ARGV, 7 do
  local id, blob, ttl, topic = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local deliverAt, key = tonumber(ARGV[i + 5]), ARGV[i + 6]
  local size = event_bytes(blob)
  seq = seq + 1
  local flags = ARGV[i + 4]
  local isKeyed = string.find(flags, 'K', 1, true)
  -- an event published with a key that this consumer had already: not taken again, not refused
  local fresh = not held[id] and not (isKeyed and redis.call('ZSCORE', idempotent, id))
  if fresh and not string.find(flags, 'F', 1, true) and not quota.fits(size) then
    fresh = false
    table.insert(refused, id)
    if not cfg.refusesForAll then discarded = discarded + 1 end
  elseif fresh and isKeyed then
    keyedAt = keyedAt or clock()
    table.insert(keyed, keyedAt)
    table.insert(keyed, id)
  end
  now = now or (deliverAt and clock())
  if not fresh and deliverAt and deliverAt > now and held[id] then
    -- spooled before (a round whose outcome was unknown, spooled again): its delay is filed again
    if not firstIndexed or deliverAt < firstIndexed then firstIndexed = deliverAt end
  end
  if fresh then
    held[id] = true
    spooled = spooled + 1
    local copy = is_stub(blob) and copy_of(id, blob)
    if copy then
      taken[copy] = (taken[copy] or 0) + 1
      -- a stub carries the event's key, for a redrive to find its line (blob_key)
      if key ~= '' then blob = blob .. ' ' .. key end
    end
    local waits = deliverAt and deliverAt > now
    local behind = lines and key ~= '' and not lines.join(key, seq, id)
    -- the smaller of the event's ttlMs and the consumer's maxTtlMs, when it ends before retention
    if cfg.maxTtlMs > 0 and (not ttl or cfg.maxTtlMs < ttl) then ttl = cfg.maxTtlMs end
    local timed = ttl and ttl < cfg.retentionMs
    local inPair = copy == named_copy(id) and not (waits or behind or timed) and string.find(flags, 'P', 1, true)
    if not inPair then
      stored = stored + 1
      blobs[2 * stored - 1], blobs[2 * stored] = id, blob
    end
    if waits then
      table.insert(delayed, deliverAt)
      table.insert(delayed, id)
      if not firstIndexed or deliverAt < firstIndexed then firstIndexed = deliverAt end
    elseif not behind then
      -- indexed by the count: table.insert would look for the table's end every time
      queued = queued + 1
      -- %d: some Redis versions (7.2.0-7.2.4) write a Lua number such as 100000000 as 1e+08
      backlog[2 * queued - 1], backlog[2 * queued] = id, pair_member(string.format('%d', seq), inPair and blob)
    end
    quota.take(size)
    spool_more(size, 1)
    if topic ~= '' then
      table.insert(charged, id)
      table.insert(charged, topic)
      topicBytes[topic] = (topicBytes[topic] or 0) + size
    end
    if timed then
      local ends = published_at(id) + ttl
      table.insert(ttls, ends)
      table.insert(ttls, id)
      if earliest < 0 or ends < earliest then earliest = ends end
    elseif waits or behind then
      -- out of publish order in the backlog later: its retention ends by the index, not the head
      local ends = retention_ends(cfg, id)
      table.insert(indexedEnds, ends)
      table.insert(indexedEnds, id)
      if not firstIndexed or ends < firstIndexed then firstIndexed = ends end
    end
  end
end
call_each('HSET', K.events, blobs, 2)
for copy, n in pairs(taken) do
  redis.call('HINCRBY', K.copies, copy, n)
end
local untaken = let_go_untaken()
enter_backlog(backlog)
if lines then lines.write() end
call_each('ZADD', idempotent, keyed, 2)
call_each('HSET', K.charged, charged, 2)
for topic, bytes in pairs(topicBytes) do
  redis.call('HINCRBY', K.topicBytes, topic, bytes)
end
call_each('ZADD', K.ttl, ttls, 2)
call_each('ZADD', K.expiry, ttls, 2)
call_each('ZADD', K.expiry, indexedEnds, 2)
call_each('ZADD', K.delayed, delayed, 2)
if keyedAt then
  redis.call('ZREMRANGEBYSCORE', idempotent, '-inf', keyedAt - tonumber(ARGV[2]))
  redis.call('PEXPIRE', idempotent, ARGV[2])
end
-- only a TTL ending before the consumer's other expiries may need filing (see DueTimes)
if earliest >= 0 and tonumber(redis.call('ZRANGE', K.expiry, 0, 0, 'WITHSCORES')[2]) < earliest then
  earliest = -1
end
-- the step at that time files the rest (next_due reads the expiry index and the delays)
if firstIndexed and (earliest < 0 or firstIndexed < earliest) then earliest = firstIndexed end
-- copies it took none of: the scheduler's step releases them now
if untaken > 0 then earliest = clock() end
realize(ARGV[1])
count({published = spooled, discarded = discarded})
if spooled > 0 then wake_waiter(cfg) end
-- its retention, for the node to push its copies' expiry when it read an older one (docs/internals.md)
local result = {spooled, earliest, cfg.refusesForAll and 1 or 0, cfg.retentionMs, #refused}
for _, id in ipairs(refused) do table.insert(result, id) end
-- the ledger needs them only in place of a hold (without one, they reach it by spool_figures.lua)
if ARGV[1] ~= '' then
  for _, figure in ipairs(spool_figures()) do table.insert(result, figure) end
end
return result
