-- Hands out one batch: stale deliveries whose backoff has passed first, then, while the consumer's
-- unacked count is below maxUnacked, requeued events whose nack delay has passed, then new events
-- in arrival order (of an ordering key, only its holder: see key_joins).
-- KEYS[EXTRA_KEY] the batch key (its batchAckId), written only when events are handed out.
-- ARGV[1] most events to hand out
-- ARGV[2] the poll's waiter id when it is a long poll, else ''
-- ARGV[3] how long the long poll still waits, ms: when nothing is handed out and this is above 0,
--         the poll parks in the waiters set until a wake-up (wake_waiter); otherwise it leaves it
-- ARGV[4] the request's id when this attempt counts against the rate limit (a client's poll
--         request, first attempt), else ''
-- ARGV[5] who it goes to, for the events' history: "<node> <http|ws>"
-- ARGV[6] most events that may become unacked (new and requeued ones: the room the gateway-wide
--         maxUnackedTotal left), '' for no limit but the consumer's maxUnacked
-- ARGV[7] the ledger hold of that room ('' for none): the answer then ends with the consumer's
--         figures (spool_figures), which the node hands the ledger in place of the hold
-- ARGV[8] the mark of this call's deliveries (16 hex digits, random: see ack_id)
-- ARGV[9] most bytes of events to hand out (maxBatchBytes): one event is handed out whatever its size
-- ARGV[10] 'S' when the node spools in the compact layout: the batch key holds the short batch
--          record (batches.lib.lua), which a node of an earlier layout cannot read; else ''
-- Returns {1, now, heldBack (0, 1 for maxUnacked, 2 for maxUnackedTotal, 3 when nothing was handed
-- out and events wait behind their keys' holders), nextDue, number of
-- figures at the end (0 without a hold), the consumer's salt, the deliveries' deadline ('' in auto
-- ack mode), the copies it let go of (an array: the node releases them once it has read the batch),
-- eventId1,
-- seq1, deliveryCount1, blob1, ...}, {-1} when the consumer does not exist, {-2, ms left} when it
-- is blocked by its rate limit, or {-3} when it is disabled. nextDue: when the scheduler next has
-- work for the consumer, when this call's deadline may be its earliest timed work, else -1
-- (nothing to file). The node makes the ackIds (AckIds.java) from eventId, seq, deliveryCount,
-- mark with the blob's size, and salt; in auto ack mode there are none.
-- A batch key holds the batch record (batches.lib.lua: what its deliveries entries are made of), and
-- the call's hand-out record (memory field 'r:<mark>', see handout_record) what the events' history
-- tells of the hand-out.
local cfg = settings()
if not cfg then return {-1} end
-- the copies it lets go of (auto ack, expiries) go to the node in the answer, released once it has
-- read the batch's events from them: a release by another call before that read would lose them
answers_let_go = true
if not cfg.enabled then
  if ARGV[2] ~= '' then redis.call('ZREM', K.waiters, ARGV[2]) end
  return {-3}
end
local now = clock()
local blocked = throttle(cfg, now, ARGV[4] ~= '', ARGV[4])
if blocked then
  if ARGV[2] ~= '' then redis.call('ZREM', K.waiters, ARGV[2]) end
  return {-2, blocked}
end
local max = tonumber(ARGV[1])
local mark = ARGV[8]
local deadline = now + cfg.ackTimeoutMs
local deadlineArg, nowArg = string.format('%d', deadline), string.format('%d', now)
-- in auto ack mode no deadline: the node then makes no ackIds (its copy of the mode may be behind)
local out = {1, now, 0, -1, 0, cfg.salt, cfg.auto and '' or deadline, let_go_copies}
-- what the batch key holds
local batchItems = {}
local handed, redelivered = 0, 0

make_due_stale(cfg, now, 1000)
-- the scheduler releases them too; here the ones due since its last step go out with this call
release_delayed(now, 1000)
if not cfg.ordering and uses_ordering() then drain_lines(1000) end

-- What the hand-outs of this call write, gathered for one variadic command each (see call_each).
local handedOut = {deliveries = {}, pending = {}, first = {}, events = {}}
-- eventIds begin with their publish time in 12 hex digits: an id not below this one is retained
-- past this call's deadline, which tells it without reading its time
local retainedPast = string.format('%012x', deadline - cfg.retentionMs)

-- The bytes of the events handed out, and whether one was left for the batch's byte bound.
local maxBytes, bytes, full = tonumber(ARGV[9]), 0, false

-- Whether the event of `blob` still fits in the batch; the first always does.
local function fits(blob)
  if not blob or handed == 0 or bytes + event_bytes(blob) <= maxBytes then return true end
  full = true
  return false
end

-- seq and n are strings; from: K.stale or K.scheduled for a redelivery leaving that set, nil for
-- a new event; firstAt: a requeued event's first hand-out; blob: the event's, false if it is gone;
-- inPair: the blob is the stub its backlog pair kept (it has no events entry yet). The caller
-- checked that it fits.
local function hand_out(id, seq, n, from, firstAt, blob, inPair)
  if not blob then
    -- an entry that outlived its event (left by an older version): it goes
    release_key(id)
    if from then
      withdraw(id)
      redis.call('ZREM', K.expiry, id)
      unacked_changed()
    end
    return
  end
  local ends, why = math.huge, nil
  if from or uses_ttl() or id < retainedPast then ends, why = ends_at(cfg, id) end
  if ends <= now then
    -- its time ran out before this hand-out: the dead-letter queue, not the client
    if inPair then redis.call('HSET', K.events, id, blob) end
    expire(cfg, id, why, now, seq, tonumber(n) - 1)
    return
  end
  if from and cfg.maxDeliveries > 0 and tonumber(n) > cfg.maxDeliveries then
    -- maxDeliveries lowered since it came back: the delivery it would be is one too many
    fail(cfg, id, seq, tonumber(n) - 1, 'MAX_DELIVERIES', now)
    return
  end
  local blobBytes = event_bytes(blob)
  handed = handed + 1
  bytes = bytes + blobBytes
  if from then redelivered = redelivered + 1 end
  if cfg.auto then
    -- at-most-once: handing out is acknowledging. A redelivery here is one handed out before the
    -- consumer switched to auto: its explicit delivery ends with it.
    if from then
      withdraw(id)
      unacked_changed()
    end
    let_go(id, blob)
    redis.call('HDEL', K.events, id)
    if from or uses_expiry() then redis.call('ZREM', K.expiry, id) end
    drop_ttl(id)
    spool_less(id, blobBytes)
    remember_ack(tonumber(seq))
    release_key(id)
    if from then
      -- a redelivery has a list of its history: this hand-out, and its end, go there
      append_history(id, HISTORY_AFTER_MS, 'D ' .. nowArg .. ' ' .. n .. ' - ' .. ARGV[5], 'A ' .. nowArg)
    end
    table.insert(out, id)
    table.insert(out, seq)
    table.insert(out, n)
    table.insert(out, blob)
    return
  end
  local size = tostring(blobBytes)
  local entry = n .. ':' .. seq .. ':' .. mark .. size
  if from then
    -- a redelivery has a list of its history: the earlier hand-out's entry (if not there yet) and
    -- this one's go there (take_handout's HSET comes before the gathered one below)
    local earlier = take_handout(id)
    local handout = 'D ' .. nowArg .. ' ' .. n .. ' ' .. deadlineArg .. ' ' .. ARGV[5] .. ' ' .. mark
    if earlier then push_history(id, earlier, handout) else push_history(id, handout) end
    entry = entry .. LISTED
  end
  -- indexed by the count of hand-outs: table.insert would look for each table's end every time
  local w, at = handedOut, 2 * handed
  w.deliveries[at - 1], w.deliveries[at] = id, entry
  if inPair then
    -- while out, its stub is in events, as every handed-out event's
    local e = #w.events
    w.events[e + 1], w.events[e + 2] = id, blob
  end
  w.pending[at - 1], w.pending[at] = deadlineArg, id
  local item = 2 * at
  batchItems[item - 3], batchItems[item - 2], batchItems[item - 1], batchItems[item] = id, seq, n, size
  if from then
    redis.call('ZREM', from, id)
  end
  -- a first delivery's deadline tells its hand-out (see metadata.lua); a stale one's first
  -- hand-out is kept already (lapse), a requeued one's was kept aside while it waited (nack.lua)
  if from == K.scheduled then
    table.insert(w.first, firstAt or nowArg)
    table.insert(w.first, id)
  end
  -- retention ending before the deadline: the expiry index catches it (rare with 7-day retention)
  if ends < deadline then
    redis.call('ZADD', K.expiry, ends, id)
  elseif from then
    redis.call('ZREM', K.expiry, id)
  end
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, seq, n, blob
end

local stale = redis.call('ZRANGEBYSCORE', K.stale, '-inf', now, 'LIMIT', 0, max)
for i, blob in ipairs(hmget(K.events, stale)) do
  if not fits(blob) then break end
  local id = stale[i]
  local n, seq = delivery_state(id)
  hand_out(id, seq, tostring(tonumber(n) + 1), K.stale, nil, blob)
end

local want = max - handed
if want > 0 and not full then
  -- the stale deliveries handed out above left the stale set but are not in pending yet (gathered)
  local unacked = redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.stale) + #handedOut.pending / 2
  local take = math.min(want, cfg.maxUnacked - unacked)
  local room = tonumber(ARGV[6])
  local heldBy = 1
  if room and room < take then take, heldBy = room, 2 end
  local capped = take < want
  if take > 0 then
    -- requeued events were handed out before: they go ahead of new ones
    local before = handed
    local scheduled = redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', now, 'LIMIT', 0, take)
    for i, blob in ipairs(hmget(K.events, scheduled)) do
      if not fits(blob) then break end
      local id = scheduled[i]
      local n, seq, _, firstAt = delivery_state(id)
      hand_out(id, seq, tostring(tonumber(n) + 1), K.scheduled, firstAt ~= '' and firstAt or nil, blob)
    end
    take = take - (handed - before)
  end
  if take > 0 and not full then
    local ids, seqs, fromReady, stubs = take_new(take)
    for i, blob in ipairs(hmget(K.events, ids)) do
      -- an events entry, when there is one, is the event's stub (see pair_member)
      local inPair = not blob and stubs[i] ~= nil
      if inPair then blob = stubs[i] end
      if not fits(blob) then
        -- the batch is full: the rest keep their places
        give_back(ids, seqs, i, fromReady, stubs)
        break
      end
      hand_out(ids[i], seqs[i], '1', nil, nil, blob, inPair)
    end
  end
  -- (the byte bound, not a cap, may be what held the rest back)
  if capped and not full and backlog_size() > 0 then
    out[3] = heldBy
  elseif handed == 0 and uses_ordering() and redis.call('EXISTS', K.behind) == 1 then
    out[3] = 3
  end
end

call_each('HSET', K.events, handedOut.events, 2)
-- (in the packed layout events holds few besides the handed-out ones: see as_hash_table)
as_hash_table(K.events, #handedOut.events / 2)
call_each('HSET', K.deliveries, handedOut.deliveries, 2)
as_hash_table(K.deliveries, #handedOut.deliveries / 2)
call_each('ZADD', K.pending, handedOut.pending, 2)
call_each('ZADD', K.first, handedOut.first, 2)
if handed > redelivered then unacked_changed() end
realize(ARGV[7])
local counts = {delivered = handed, redelivered = redelivered}
if cfg.auto then counts.acked = handed end
count(counts)
write_memory()

-- the scheduler's entry is never later than the consumer's earliest timed work: only a deadline
-- earlier than every other pending one may need filing (see DueTimes)
if #batchItems > 0 and tonumber(redis.call('ZRANGE', K.pending, 0, 0, 'WITHSCORES')[2]) >= deadline then
  out[4] = next_due(cfg, deadline)
end

if #batchItems > 0 then
  -- the batch outlives any delivery of this call: its deadline, and the time the scheduler may take
  local record = ARGV[10] == 'S' and short_batch_record(mark, batchItems)
      or mark .. ' ' .. table.concat(batchItems, ' ')
  redis.call('SET', KEYS[EXTRA_KEY], record, 'PX', cfg.ackTimeoutMs + 3600000)
  -- a consumer's memory is one key, moved whole when its slot migrates: records kept a shorter
  -- while (see handout_record) make it several times smaller for a busy consumer
  redis.call('HSET', K.memory, 'r:' .. mark, nowArg .. ' ' .. deadlineArg .. ' ' .. ARGV[5])
  keep('r:' .. mark, cfg.ackTimeoutMs + HANDOUT_AFTER_MS)
end

local waiter, wait = ARGV[2], tonumber(ARGV[3])
if waiter ~= '' then
  if handed == 0 and wait > 0 then
    -- NX: a poll asking again after a missed or early wake-up keeps its place
    redis.call('ZADD', K.waiters, 'NX', now + wait, waiter)
    if redis.call('PTTL', K.waiters) < wait then redis.call('PEXPIRE', K.waiters, wait + 1000) end
  else
    redis.call('ZREM', K.waiters, waiter)
  end
end
-- a full batch may have left more behind, and so may a call that dropped dead backlog pairs (see
-- take_backlog) or let an event's turn come (auto ack): the next waiter takes it on
if handed == max or full or dropped_dead or keys_passed then wake_waiter(cfg) end
if ARGV[7] ~= '' then
  local figures = spool_figures()
  out[5] = #figures
  for _, figure in ipairs(figures) do table.insert(out, figure) end
end
return out
