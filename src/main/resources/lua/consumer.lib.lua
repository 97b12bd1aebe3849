-- Shared by every per-consumer script. On Redis 7 and later it is loaded once as a function
-- library, each script a function of it; on earlier versions it is prepended to each script (see
-- Script.java). Either way every call starts with begin_call: what depends on the call (its keys
-- and arguments, what the library gathers while it runs) lives in the locals it sets.
-- Every per-consumer script receives the same KEYS, all under the consumer's hash tag:
-- KEYS[1] meta        HASH   settings, counters, salt, arrival sequence
-- KEYS[2] backlog     LIST   eventId, arrival sequence, eventId, sequence, ...: the events spooled
--                            and not handed out since, in arrival order; a pair whose eventId is in
--                            KEYS[20] is dead (see leave_backlog)
-- KEYS[3] events      HASH   eventId -> event blob (JSON members, payload as the publisher sent it)
-- KEYS[4] expiry      ZSET   eventId -> end of retention, for stale deliveries and for pending
--                            ones whose retention ends before their deadline (the backlog expires
--                            from its head, other pending deliveries when their deadline passes)
-- KEYS[5] waiters     ZSET   long polls parked for this consumer, "<node>/<instance>/<poll>" ->
--                            the time their wait ends (see wake_waiter)
-- KEYS[6] pending     ZSET   eventId -> ack deadline: handed out, not acked, deadline ahead
-- KEYS[7] stale       ZSET   eventId -> time it may be handed out again (deadline + backoff)
-- KEYS[8] deliveries  HASH   eventId -> "deliveryCount:arrivalSequence:mark" while handed out
--                            (mark: see ack_id), ":firstHandOut" appended while it waits out a nack
--                            delay, LISTED once its history list holds the hand-out (see note)
-- KEYS[9] first       ZSET   eventId -> time of its first hand-out, while unacked, for those whose
--                            deadline does not tell it (see first_handout)
-- KEYS[10] polls      ZSET   request id -> time, the poll requests of the last second (rate limit)
-- KEYS[11] scheduled  ZSET   eventId -> when a requeued (nacked) event may go out again; such
--                            events are not unacked (they do not count against maxUnacked)
-- KEYS[12] dead       ZSET   eventId -> when it was dead-lettered: the dead-letter queue
-- KEYS[13] errors     ZSET   eventId -> when it was rejected: the error queue
-- KEYS[14] failures   HASH   eventId -> JSON of why it is in the dead-letter or error queue
-- KEYS[15] reasons    HASH   eventId -> the reason of its last nack, while it is held
-- KEYS[16] ttl        ZSET   eventId -> when its time to live ends, for events whose TTL (ttlMs,
--                            or the consumer's maxTtlMs) ends before their retention
-- KEYS[17] charged    HASH   eventId -> its topic, for events counted against their topic's quota
-- KEYS[18] topicBytes HASH   topic -> spooled bytes of the charged events of that topic
-- KEYS[19] realized   ZSET   ledger holds ("<hold id>:<consumer>") whose effect this consumer's
--                            figures include now -> when; the node removes them once the ledger knows
-- KEYS[20] gone       SET    eventIds whose pair in the backlog is dead: they left it from its
--                            middle (TTL, retract), and the pair goes when it reaches the head
-- KEYS[21] delayed    ZSET   eventId -> its deliverAt: published with a delay not over yet; each
--                            has an entry in the expiry index (see publish.lua), and enters the
--                            backlog's end when its time comes (see release_delayed)
-- KEYS[22] holders    HASH   ordering key -> the eventId that holds it: the first of the key's line
--                            (see key_joins), in the queue like any event
-- KEYS[23] keyof      HASH   eventId -> its place in its key's line (see key_place), for the events
--                            in a line
-- KEYS[24] behind     ZSET   places, all scored 0 (so in byte order: by key, then arrival): the
--                            events of a line after its holder, which wait for their turn
-- KEYS[25] ready      ZSET   eventId -> arrival sequence: events whose turn came (their key's
--                            holder left the queue), not handed out yet; they go out with the
--                            backlog's head, oldest arrival first (see take_new)
-- KEYS[26] memory     HASH   what the consumer remembers for a while, each field until its time in
--                            KEYS[27]: 'h:<eventId>' an event's history (see note), 'r:<mark>' a
--                            poll call's hand-out record (see handout_record), 'a:<k>' and 'd:<k>'
--                            the k-th segment of its ack and drop memory (see remember), 'q:<hold>'
--                            room a publish round holds in its own quota (see hold_own)
-- KEYS[27] forgets    ZSET   those fields -> when they go (see forget_due): one structure for what
--                            would otherwise be keys of their own, built inside scripts, which a
--                            Redis Cluster could not tell a script's slot by, nor migrate safely
-- KEYS[28] copies     HASH   copyId -> how many of that stored copy's events the consumer holds,
--                            in the shared layout (docs/internals.md; see let_go)
-- KEYS[29] freed      LIST   copyIds the consumer let go of, for the scheduler to release
-- Scripts may add keys of their own from KEYS[30] on (EXTRA_KEY).
-- Numbers handed to redis.call are formatted with sprintf each time: hot loops pass strings.
local KEYS, ARGV, K
local EXTRA_KEY = 30
-- Variadic commands: one redis.call for many members costs far less than one per member (each
-- call converts its arguments, and with AOF every write call is logged on its own). Lua's C stack
-- caps how many arguments one call may take, so long lists go in pieces of CALL_ARGS.
local CALL_ARGS = 4000

-- Calls call(...) with the items of list in pieces of at most CALL_ARGS (groups of `stride` kept
-- together), and returns the replies in order.
local function in_pieces(list, stride, call)
  local replies, n = {}, #list
  local piece = CALL_ARGS - CALL_ARGS % stride
  for from = 1, n, piece do
    table.insert(replies, call(unpack(list, from, math.min(from + piece - 1, n))))
  end
  return replies
end

-- Runs `command key args...` over args in pieces (see in_pieces); returns the sum of the integer
-- replies (members added or removed).
local function call_each(command, key, args, stride)
  local total = 0
  for _, reply in ipairs(in_pieces(args, stride, function(...) return redis.call(command, key, ...) end)) do
    if type(reply) == 'number' then total = total + reply end
  end
  return total
end

-- The values of hash fields, in the order asked (false for a missing one).
local function hmget(key, fields)
  if #fields == 0 then return {} end
  if #fields <= CALL_ARGS then return redis.call('HMGET', key, unpack(fields)) end
  local values, n = {}, 0
  for _, reply in ipairs(in_pieces(fields, 1, function(...) return redis.call('HMGET', key, ...) end)) do
    for _, v in ipairs(reply) do
      n = n + 1
      values[n] = v
    end
  end
  return values
end

-- Redis keeps a small hash as a listpack (up to hash-max-listpack-entries fields, 128 or 512),
-- where every field read or written scans the whole list: HMGET of 36 fields of a 400-field one
-- took 21.6 us against 1.4 us for a hash table. One field longer than hash-max-listpack-value (64
-- bytes) makes the hash a hash table for good; it is added once the hash holds more than
-- LISTPACK_AT_MOST fields (it then stays, one field, until the key is deleted with the consumer).
-- Call after adding `added` fields.
local LISTPACK_AT_MOST = 64
local HASH_TABLE_FIELD = '~hash-table'
-- 65 characters (the library's loading code may not call string functions)
local HASH_TABLE_VALUE = '-----------------------------------------------------------------'
local function as_hash_table(key, added)
  if added > 0 and redis.call('HLEN', key) > LISTPACK_AT_MOST then
    redis.call('HSETNX', key, HASH_TABLE_FIELD, HASH_TABLE_VALUE)
  end
end

-- The consumer's name, as its keys spell it.
local CONSUMER
-- A node's wake-up channel is this prefix and its id (Keys.wakeChannel on the Java side).
local WAKE_CHANNEL_PREFIX = 'herald:wake:'
-- A node subscribes to this prefix and its id on every primary (Keys.aliveChannel): its subscribers
-- there tell that it listens, where PUBLISH counts only the receivers on its own cluster shard.
local ALIVE_CHANNEL_PREFIX = 'herald:alive:'
-- Where a consumer's block is announced to every node (Keys.THROTTLE_CHANNEL).
local THROTTLE_CHANNEL = 'herald:throttle'
-- Acked events are remembered by arrival sequence, one bit each, so remembering an ack costs a bit
-- rather than a sorted-set entry (see remember). A consumer created anew starts its sequence anew:
-- its memory fields name its salt, so that it never reads the bits of a predecessor of the same
-- name (consumer_put clears those too).
local ACKED = 'a'
-- events dropped instead of dead-lettered or rejected, so that a late ack says so
local DROPPED = 'd'
-- a segment's bytes are written whole at each change: small, so that an ack writes (and replicas
-- and the AOF receive) little
local MEMORY_BITS = 1024
local ACKED_MEMORY_MS = 600000
-- Memory fields outlive their time by up to this much: the scheduler forgets a minute's at once.
local FORGET_SLACK_MS = 60000
-- The first 8 characters of the consumer's salt, read by settings().
local memory_salt

-- How long an event's history list lives after each entry: longer than any event is held (see
-- note). Set from the consumer's retention by settings().
local held_history_ms

-- The counters this call read with the settings (nil before): count() then writes their new values
-- in one HSET, where an HINCRBY each would be a command per counter.
local counters

-- The consumer's settings, or nil when the consumer does not exist (deleted meanwhile).
local function settings()
  -- one read for what any script may need: settings, the quota and spool figures own_quota checks,
  -- and the rate limit's state
  local v = redis.call('HMGET', K.meta, 'salt', 'ackMode', 'ackTimeoutMs', 'maxUnacked',
    'retentionMs', 'initialDelayMs', 'multiplier', 'maxDelayMs', 'maxDeliveries', 'deadLetter',
    'errorQueue', 'maxTtlMs', 'enabled', 'rejectPublishWhenRefused',
    'quotaBytes', 'quotaEvents', 'spooledBytes', 'spooledEvents', 'blockedUntil', 'rateTps', 'rateBlockMs',
    'published', 'delivered', 'acked', 'spoolVersion', 'ordering', 'windows')
  if not v[1] then return nil end
  memory_salt = string.sub(v[1], 1, 8)
  held_history_ms = tonumber(v[5]) + 600000
  counters = {spooledBytes = tonumber(v[17] or '0'), spooledEvents = tonumber(v[18] or '0'),
    published = tonumber(v[22] or '0'), delivered = tonumber(v[23] or '0'), acked = tonumber(v[24] or '0'),
    spoolVersion = tonumber(v[25] or '0')}
  return {
    salt = v[1], auto = v[2] == 'auto', ackTimeoutMs = tonumber(v[3]), maxUnacked = tonumber(v[4]),
    retentionMs = tonumber(v[5]), initialDelayMs = tonumber(v[6]), multiplier = tonumber(v[7]),
    maxDelayMs = tonumber(v[8]), maxDeliveries = tonumber(v[9] or '0'),
    -- consumers stored before these settings existed have the protocol's defaults
    deadLetter = v[10] ~= 'false', errorQueue = v[11] ~= 'false', maxTtlMs = tonumber(v[12] or '0'),
    enabled = v[13] ~= 'false', refusesForAll = v[14] ~= 'false',
    quotaBytes = tonumber(v[15]), quotaEvents = tonumber(v[16]),
    spooledBytes = tonumber(v[17] or '0'), spooledEvents = tonumber(v[18] or '0'),
    -- consumers stored before the rate limit existed have the protocol's defaults
    blockedUntil = tonumber(v[19]), rateTps = tonumber(v[20]) or 100, rateBlockMs = tonumber(v[21]) or 45000,
    ordering = v[26] == 'key', windows = v[27],
  }
end

-- The first 12 hex digits of an eventId are its publish time in ms.
local function published_at(id)
  return tonumber(string.sub(id, 1, 12), 16)
end

local function retention_ends(cfg, id)
  return published_at(id) + cfg.retentionMs
end

-- Whether any event of the consumer has a TTL (asked once per call: most consumers have none).
local ttl_in_use
local function uses_ttl()
  if ttl_in_use == nil then ttl_in_use = redis.call('EXISTS', K.ttl) == 1 end
  return ttl_in_use
end

-- Whether the expiry index holds anything (TTLs, delayed or redriven events, stale deliveries).
local expiry_in_use
local function uses_expiry()
  if expiry_in_use == nil then expiry_in_use = redis.call('EXISTS', K.expiry) == 1 end
  return expiry_in_use
end

-- When an event's time with the consumer ends, and why: its TTL (K.ttl) or its retention.
local function ends_at(cfg, id)
  local ttl = uses_ttl() and redis.call('ZSCORE', K.ttl, id)
  if ttl then return tonumber(ttl), 'TTL_EXPIRED' end
  return retention_ends(cfg, id), 'RETENTION'
end

-- Removes an event's time to live (it left the consumer).
local function drop_ttl(id)
  if uses_ttl() then redis.call('ZREM', K.ttl, id) end
end

-- Redelivery backoff after the n-th delivery missed its deadline.
local function backoff(cfg, n)
  return math.min(cfg.initialDelayMs * cfg.multiplier ^ (n - 1), cfg.maxDelayMs)
end

-- Redis' time in ms, read once per call: every time a call compares or writes is this one.
local call_now
local function clock()
  if not call_now then call_now = now_ms() end
  return call_now
end

-- Keeps a memory field until `ms` from now.
local function keep(field, ms)
  redis.call('ZADD', K.forgets, string.format('%d', clock() + ms), field)
end

-- Room held in the consumer's own quota for publish rounds on their way (own_hold.lua): memory
-- field 'q:<hold>' = "<bytes> <events>", counted in the meta fields heldBytes and heldEvents until
-- the round's spool call takes it, or its time comes (its node went before spooling).
local function hold_own(hold, bytes, events, keepMs)
  local b, e = string.format('%d', bytes), string.format('%d', events)
  redis.call('HSET', K.memory, 'q:' .. hold, b .. ' ' .. e)
  keep('q:' .. hold, keepMs)
  redis.call('HINCRBY', K.meta, 'heldBytes', b)
  redis.call('HINCRBY', K.meta, 'heldEvents', e)
end

-- Lets the holds of these 'q:' fields go (those already gone are no-ops).
local function release_own_holds(fields)
  local bytes, events, held = 0, 0, {}
  for i, value in ipairs(hmget(K.memory, fields)) do
    local b, e = string.match(value or '', '^(%d+) (%d+)$')
    if b then
      bytes, events = bytes + tonumber(b), events + tonumber(e)
      table.insert(held, fields[i])
    end
  end
  if #held == 0 then return end
  call_each('HDEL', K.memory, held, 1)
  call_each('ZREM', K.forgets, held, 1)
  redis.call('HINCRBY', K.meta, 'heldBytes', string.format('%d', -bytes))
  redis.call('HINCRBY', K.meta, 'heldEvents', string.format('%d', -events))
end

-- Memory fields whose time came go. Bounded by limit; returns whether more may have come.
local function forget_due(now, limit)
  local ended = redis.call('ZRANGEBYSCORE', K.forgets, '-inf', now, 'LIMIT', 0, limit)
  local holds = {}
  for _, field in ipairs(ended) do
    if string.sub(field, 1, 2) == 'q:' then table.insert(holds, field) end
  end
  release_own_holds(holds)
  call_each('HDEL', K.memory, ended, 1)
  call_each('ZREM', K.forgets, ended, 1)
  return #ended == limit
end

-- ackIds are "<eventId>.<seq>.<n>.<mark>.<token>": the event, its arrival sequence, the delivery's
-- number (or, in the dead-letter and error queues, the queue's name), a mark that tells this
-- delivery from every other one of the event (for hand-outs the poll call's 16 random hex digits,
-- passed in by the node, so that no redrive resetting n and no Redis rollback repeating a hand-out
-- ever repeats an ackId, then the event's size in bytes, so that its ack need not read the blob;
-- the time it entered the queue for queue reads), and the unguessable token: only this
-- consumer's salt produces it. All parts are strings.
local function ack_token(cfg, id, seq, n, mark)
  return string.sub(redis.sha1hex(cfg.salt .. ':' .. id .. ':' .. seq .. ':' .. n .. ':' .. mark), 1, 20)
end

local function ack_id(cfg, id, seq, n, mark)
  return id .. '.' .. seq .. '.' .. n .. '.' .. mark .. '.' .. ack_token(cfg, id, seq, n, mark)
end

local ACK_ID = '^([%x%-]+)%.(%d+)%.(%w+)%.(%x+)%.(%x+)$'

-- The parts of an ackId this consumer gave out: eventId, seq, n, mark; nil for anything else.
-- queue: nil for a hand-out's ackId (n a number), 'dead' or 'errors' for one of a queue read.
local function read_ack_id(cfg, ackId, queue)
  local id, seq, n, mark, token = string.match(ackId, ACK_ID)
  if not id or (queue and n ~= queue) or (not queue and not string.match(n, '^%d+$'))
      or token ~= ack_token(cfg, id, seq, n, mark) then
    return nil
  end
  return id, seq, n, mark
end

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

-- The copy holding a stub's event: the one its stub names, else the one its eventId names.
local function copy_of(id, stub)
  return string.match(stub, '^%d+@([^ ]+)') or string.sub(id, 1, 26)
end

-- The copies this call let go of: the consumer holds none of their events any more (see let_go).
-- A script that hands them to its node in its answer sets answers_let_go; for the others they go
-- to the freed list, which the scheduler's step releases (freed_filed says it got some).
local let_go_copies, answers_let_go, freed_filed

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
        freed_filed = true
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

-- How many events may go out now: the backlog's live pairs, and those whose turn came.
local function backlog_size()
  local size = redis.call('LLEN', K.backlog) / 2
  if size > 0 and uses_gone() then size = size - redis.call('SCARD', K.gone) end
  if uses_ordering() then size = size + redis.call('ZCARD', K.ready) end
  return size
end

-- Whether the event is in the backlog: spooled, not handed out since it came (back) (nor in the
-- sets of handed-out events: an older version's entry may lack its deliveries entry), not in the
-- dead-letter or error queue, not waiting out its delay, its pair not dead.
local function in_backlog(id)
  return redis.call('HEXISTS', K.events, id) == 1 and redis.call('HEXISTS', K.deliveries, id) == 0
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
-- their eventIds and seqs (strings), in arrival order.
local function take_backlog(n)
  local ids, seqs = {}, {}
  if not uses_gone() then
    local popped = redis.call('LPOP', K.backlog, 2 * n) or {}
    for i = 1, #popped, 2 do
      local k = (i + 1) / 2
      ids[k], seqs[k] = popped[i], popped[i + 1]
    end
    return ids, seqs
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
        ids[k], seqs[k] = id, piece[2 * i]
      end
    end
    if #piece < 2 * size then break end
  end
  if looked > 0 then redis.call('LPOP', K.backlog, 2 * looked) end
  call_each('SREM', K.gone, dropped, 1)
  if #dropped > 0 then dropped_dead = true end
  return ids, seqs
end

-- Takes up to n events that may go out now, oldest arrival first: from the backlog's head and from
-- K.ready (events whose turn came); those of the backlog not taken go back to its head. Returns
-- their eventIds and seqs, and the set of those taken from K.ready (nil for none).
local function take_new(n)
  local ready = uses_ordering() and redis.call('ZRANGE', K.ready, 0, n - 1, 'WITHSCORES') or {}
  local ids, seqs = take_backlog(n)
  if #ready == 0 then return ids, seqs, nil end
  local takenIds, takenSeqs, fromReady = {}, {}, {}
  local r, b = 1, 1
  while #takenIds < n and (r < #ready or b <= #ids) do
    local k = #takenIds + 1
    if b > #ids or (r < #ready and tonumber(ready[r + 1]) < tonumber(seqs[b])) then
      takenIds[k], takenSeqs[k] = ready[r], ready[r + 1]
      table.insert(fromReady, ready[r])
      r = r + 2
    else
      takenIds[k], takenSeqs[k] = ids[b], seqs[b]
      b = b + 1
    end
  end
  call_each('ZREM', K.ready, fromReady, 1)
  local back, readySet = {}, {}
  for i = #ids, b, -1 do
    table.insert(back, seqs[i])
    table.insert(back, ids[i])
  end
  call_each('LPUSH', K.backlog, back, 2)
  for _, id in ipairs(fromReady) do readySet[id] = true end
  return takenIds, takenSeqs, readySet
end

-- Puts what take_new took from the `from`-th on back where it was (fromReady: its third answer),
-- as if it had not been taken.
local function give_back(ids, seqs, from, fromReady)
  local back, ready = {}, {}
  for i = #ids, from, -1 do
    if fromReady and fromReady[ids[i]] then
      table.insert(ready, seqs[i])
      table.insert(ready, ids[i])
    else
      table.insert(back, seqs[i])
      table.insert(back, ids[i])
    end
  end
  call_each('LPUSH', K.backlog, back, 2)
  call_each('ZADD', K.ready, ready, 2)
end

-- Removes an event from every structure of the consumer; returns the bytes it held.
local function forget(id)
  if uses_ordering() then
    redis.call('ZREM', K.ready, id)
    release_key(id)
  end
  local value = redis.call('HGET', K.events, id)
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

-- The consumer's spool: spooledBytes and spooledEvents count the events of its queue (backlog,
-- handed out, stale, waiting out a nack delay), not those of its dead-letter and error queues.
-- Changes gather here and are written by the next count(). Whenever the spool or the unacked count
-- changed, spoolVersion is bumped too, so that the gateway-wide ledger (quota_settle.lua) can tell
-- a newer figure from an older one.
local spool_change
local charges_in_use

-- The unacked count (pending + stale) changed: the ledger's figure of it is out of date.
local function unacked_changed()
  spool_change.figures = true
end

local function spool_less(id, bytes)
  spool_change.bytes = spool_change.bytes - bytes
  spool_change.events = spool_change.events - 1
  spool_change.figures = true
  if charges_in_use == nil then charges_in_use = redis.call('EXISTS', K.charged) == 1 end
  if charges_in_use then
    local topic = redis.call('HGET', K.charged, id)
    if topic then
      redis.call('HDEL', K.charged, id)
      if redis.call('HINCRBY', K.topicBytes, topic, -bytes) <= 0 then redis.call('HDEL', K.topicBytes, topic) end
    end
  end
end

local function spool_more(bytes, events)
  spool_change.bytes = spool_change.bytes + bytes
  spool_change.events = spool_change.events + events
  spool_change.figures = true
end

-- The consumer's own quotaBytes/quotaEvents against its exact spool figures (as settings() read
-- them: call it before the script changes its spool), for a script that adds events to its spool:
-- fits(bytes) tells whether one more of that size fits, take(bytes) counts it.
local function own_quota(cfg)
  local maxBytes, maxEvents = cfg.quotaBytes, cfg.quotaEvents
  local bytesHeld, eventsHeld = cfg.spooledBytes, cfg.spooledEvents
  if maxBytes or maxEvents then
    -- with the room publish rounds on their way hold (own_hold.lua); holds whose time came go first
    local held = redis.call('HMGET', K.meta, 'heldBytes', 'heldEvents')
    if tonumber(held[1] or '0') > 0 or tonumber(held[2] or '0') > 0 then
      forget_due(clock(), 100)
      held = redis.call('HMGET', K.meta, 'heldBytes', 'heldEvents')
    end
    bytesHeld, eventsHeld = bytesHeld + tonumber(held[1] or '0'), eventsHeld + tonumber(held[2] or '0')
  end
  return {
    fits = function(bytes)
      return not ((maxBytes and bytesHeld + bytes > maxBytes) or (maxEvents and eventsHeld + 1 > maxEvents))
    end,
    take = function(bytes)
      bytesHeld, eventsHeld = bytesHeld + bytes, eventsHeld + 1
    end,
  }
end

-- Adds to the consumer's counters (name -> amount), skipping zeros, and writes the spool's changes:
-- those read with the settings (counters) in one HSET of their new values, the others by HINCRBY.
local function count(amounts)
  local written, n = {}, 0
  local function add(name, amount)
    if amount == 0 then return end
    if counters and counters[name] then
      counters[name] = counters[name] + amount
      -- as an integer's digits: Redis 7.2.0-7.2.4 print some whole Lua numbers as 1e+08
      written[n + 1], written[n + 2] = name, string.format('%d', counters[name])
      n = n + 2
    else
      redis.call('HINCRBY', K.meta, name, amount)
    end
  end
  for name, amount in pairs(amounts) do add(name, amount) end
  add('spooledBytes', spool_change.bytes)
  add('spooledEvents', spool_change.events)
  if spool_change.figures then add('spoolVersion', 1) end
  if n > 0 then redis.call('HSET', K.meta, unpack(written)) end
  spool_change.bytes, spool_change.events, spool_change.figures = 0, 0, false
end

-- Records that this script did what the ledger hold `hold` ('' for none) stood for: figures read
-- from now on include it, and say so (see spool_figures).
local REALIZED_KEPT_MS = 600000
local function realize(hold)
  if hold == '' then return end
  local now = clock()
  redis.call('ZADD', K.realized, now, hold)
  -- normally removed by the node once the ledger knows; never kept longer than this
  redis.call('ZREMRANGEBYSCORE', K.realized, '-inf', now - REALIZED_KEPT_MS)
end

-- The consumer's figures for the ledger: {bytes, events, version, salt, unacked, number of realized
-- holds, the holds..., topic1, bytes1, ...}; the salt tells a consumer from an earlier one of the
-- same name, whose versions counted from zero too.
local function spool_figures()
  local v = redis.call('HMGET', K.meta, 'spooledBytes', 'spooledEvents', 'spoolVersion', 'salt')
  local realized = redis.call('ZRANGE', K.realized, 0, -1)
  local figures = {tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0'), v[4],
    redis.call('ZCARD', K.pending) + redis.call('ZCARD', K.stale), #realized}
  for _, hold in ipairs(realized) do table.insert(figures, hold) end
  for _, field in ipairs(redis.call('HGETALL', K.topicBytes)) do table.insert(figures, field) end
  return figures
end


-- Moves an event into the dead-letter queue (why: MAX_DELIVERIES, TTL_EXPIRED or RETENTION), or to
-- the error queue (why: nil, a REJECT), with its delivery count n and last nack reason; with the
-- queue switched off the event is dropped instead, counted, and remembered so that a late ack says
-- so. It stays there until redriven or acked, for retentionMs at most, and never past twice its retention
-- after its publish. Returns the nack status.
local function fail(cfg, id, seq, n, why, now)
  release_key(id)
  local reason = redis.call('HGET', K.reasons, id)
  withdraw(id)
  local keep = (why and cfg.deadLetter) or (not why and cfg.errorQueue)
  note(id, 'F ' .. now .. ' ' .. (why or 'REJECTED') .. (keep and '' or ' DROPPED'))
  if not keep then
    spool_less(id, forget(id))
    if seq then remember(DROPPED, {tonumber(seq)}) end
    count({dropped = 1})
    return 'DROPPED'
  end
  local value = redis.call('HGET', K.events, id)
  spool_less(id, value and event_bytes(value) or 0)
  redis.call('ZADD', why and K.dead or K.errors, now, id)
  redis.call('HSET', K.failures, id, cjson.encode({deadLetterReason = why, deliveryCount = tonumber(n),
    -- no nack reason (HGET's false) leaves the field out, as cjson would write false
    reason = reason or nil, seq = seq and tonumber(seq)}))
  -- never beyond twice its retention after its publish: its stored copy is kept that long (and an
  -- hour), however often it comes back and fails again (docs/internals.md, "Retention")
  redis.call('ZADD', K.expiry, math.min(now, retention_ends(cfg, id)) + cfg.retentionMs, id)
  redis.call('ZREM', K.ttl, id)
  if why then
    count({deadLettered = 1, ['deadLettered:' .. why] = 1})
    return 'DEAD_LETTERED'
  end
  count({rejected = 1})
  return 'REJECTED'
end

-- An event whose time ran out (why: TTL_EXPIRED or RETENTION) goes to the dead-letter queue, or is
-- dropped with deadLetter off; one already in the dead-letter or error queue leaves for good
-- (counted as expired). seq and n: its arrival sequence and delivery count, when the caller has
-- them (it took the event from the backlog, or read its delivery); without them an event that is
-- not handed out is in the backlog, and leaves it from the middle.
local function expire(cfg, id, why, now, seq, n)
  if redis.call('HEXISTS', K.events, id) == 0 then
    -- an index entry that outlived its event (left by an older version): only the entry goes
    forget(id)
    return
  end
  if redis.call('HEXISTS', K.failures, id) == 1 then
    note(id, 'L ' .. now)
    forget(id)
    count({expired = 1})
    return
  end
  if not seq then
    n, seq = delivery_state(id)
    if not n and not (redis.call('ZSCORE', K.pending, id) or redis.call('ZSCORE', K.stale, id)
        or redis.call('ZSCORE', K.scheduled, id)) then
      -- in the backlog: it leaves from the middle. Its arrival sequence is in its pair only; the
      -- dead-letter queue's ackIds and the dropped mark need one, so it gets a new one (taking
      -- its pair back later, it goes out with the pair's). A delayed event has no pair yet, nor
      -- one waiting for its turn.
      leave_queue(id)
      seq = string.format('%d', redis.call('HINCRBY', K.meta, 'seq', 1))
    end
  end
  fail(cfg, id, seq, tonumber(n or '0'), why, now)
end

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
      expire(cfg, id, 'RETENTION', now, head[2 * i], 0)
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

-- If a poll would get something now, wakes one parked poll: the one whose wait ends first. Waking
-- one rather than all makes each event fetched by one client instead of raced for by all, and
-- spreads events over the clients in turn (a poll that got events parks again at the back).
-- Waiters whose wait is over, or whose node no longer listens, are dropped on the way. Whether a
-- node listens is told by its subscribers to its alive channel on this server: on a Redis Cluster
-- PUBLISH counts only the receivers on its own shard (the wake-up reaches the node's one wake
-- subscription wherever it is), and a count of 0 there would wake every waiter in turn. A node of
-- a version without an alive channel is still found by its PUBLISH count on one server.
local function wake_waiter(cfg)
  if redis.call('EXISTS', K.waiters) == 0 then return end
  local now = clock()
  if not has_work(cfg, now) then return end
  while true do
    local first = redis.call('ZPOPMIN', K.waiters)
    if #first == 0 then return end
    if tonumber(first[2]) > now then
      local node = string.match(first[1], '^([^/]+)/')
      local listens = redis.call('PUBSUB', 'NUMSUB', ALIVE_CHANNEL_PREFIX .. node)[2] > 0
      if redis.call('PUBLISH', WAKE_CHANNEL_PREFIX .. node, first[1] .. ' ' .. CONSUMER) > 0 or listens then
        return
      end
    end
  end
end

-- Full push windows. A socket's full push window reopens at once when a delivery of it is settled
-- over the socket, but when it is settled by another path (an HTTP ack or nack) only at the
-- window's next still-out check (still_out.lua), at growing intervals. So that check files the
-- HTTP verticle instance of the socket in meta 'windows' ("<instance>/window <until> ..."), and an
-- ack or nack by another path that settled something tells each instance filed there until then
-- (over its node's wake channel), whose full windows then check at once. A few bytes per instance.
-- A check that finds its instance filed for more than half of tellMs more writes nothing.
local function file_window(id, tellMs, now, windows)
  local kept = {id, string.format('%d', now + tellMs)}
  for other, at in string.gmatch(windows or '', '(%S+) (%S+)') do
    local untilMs = tonumber(at) or 0
    if other == id and untilMs > now + tellMs / 2 then return end
    if other ~= id and untilMs > now then
      table.insert(kept, other)
      table.insert(kept, at)
    end
  end
  redis.call('HSET', K.meta, 'windows', table.concat(kept, ' '))
end

local function tell_windows(cfg, now)
  for id, at in string.gmatch(cfg.windows or '', '(%S+) (%S+)') do
    local node = string.match(id, '^([^/]+)/')
    if node and (tonumber(at) or 0) > now then
      redis.call('PUBLISH', WAKE_CHANNEL_PREFIX .. node, id .. ' ' .. CONSUMER)
    end
  end
end

-- The rate limit. Poll requests of the last second are kept in a sliding log (K.polls), so no
-- one-second window, wherever its edges fall, admits more than tps of them. The request beyond
-- blocks the consumer for blockMs (meta blockedUntil) and is announced to every node.
-- counted: this is a client's poll request (not a re-attempt or a push fetch); id: unique to it.
-- Returns nil when the request may go on, else the ms left of the block. cfg: as settings() read
-- it at the start of the script.
local function throttle(cfg, now, counted, id)
  local blockedUntil = cfg.blockedUntil
  if blockedUntil and blockedUntil > now then
    if counted then redis.call('HINCRBY', K.meta, 'throttled', 1) end
    return blockedUntil - now
  end
  if not counted then return nil end
  local tps, blockMs = cfg.rateTps, cfg.rateBlockMs
  redis.call('ZREMRANGEBYSCORE', K.polls, '-inf', now - 1000)
  if redis.call('ZCARD', K.polls) >= tps then
    redis.call('DEL', K.polls)
    redis.call('HSET', K.meta, 'blockedUntil', now + blockMs)
    count({throttled = 1, blocks = 1})
    redis.call('PUBLISH', THROTTLE_CHANNEL, CONSUMER .. ' ' .. blockMs)
    return blockMs
  end
  redis.call('ZADD', K.polls, now, id)
  redis.call('PEXPIRE', K.polls, 1000)
  return nil
end

-- The answer of a settle over named deliveries and batches: {the statuses of the `direct` first,
-- then per batch key from KEYS[EXTRA_KEY] on its rows ({} for an unknown one), or 0 for a batch
-- left for another call}. batches: per key the range of settled items it stood for, or false;
-- row(rows, i) appends the row of the i-th.
local function settle_answer(statuses, direct, batches, row)
  local own = {}
  for i = 1, direct do
    own[i] = statuses[i]
  end
  local result = {own}
  for k = EXTRA_KEY, #KEYS do
    local range = batches[k]
    if not range then
      table.insert(result, 0)
    else
      local rows = {}
      for i = range[1], range[2] do
        row(rows, i)
      end
      table.insert(result, rows)
    end
  end
  return result
end

-- Applies settle (a list of ackIds -> their statuses in order) to ARGV[from..to] and to the ackIds
-- of each batch key from KEYS[EXTRA_KEY] on, taking a batch only while fewer than `budget` ackIds
-- were taken: a call settles at most budget + one batch, all in one settle. Returns {statuses in
-- order, then per batch key {ackId, status, ...} ({} for an unknown one), or 0 for a batch left
-- for another call}.
local function ack_each(settle, from, to, budget)
  local ackIds = {}
  for i = from, to do
    table.insert(ackIds, ARGV[i])
  end
  local direct = #ackIds
  local batches = {}
  for k = EXTRA_KEY, #KEYS do
    if #ackIds >= budget then
      batches[k] = false
    else
      local first = #ackIds + 1
      for ackId in string.gmatch(redis.call('GET', KEYS[k]) or '', '%S+') do
        table.insert(ackIds, ackId)
      end
      batches[k] = {first, #ackIds}
    end
  end
  local statuses = settle(ackIds)
  return settle_answer(statuses, direct, batches, function(rows, i)
    table.insert(rows, ackIds[i])
    table.insert(rows, statuses[i])
  end)
end

-- A settle for ack_each from a function settling one ackId.
local function one_by_one(settle_one)
  return function(ackIds)
    local statuses = {}
    for i, ackId in ipairs(ackIds) do
      statuses[i] = settle_one(ackId)
    end
    return statuses
  end
end

-- Starts a call: its keys and arguments, and a fresh state for everything the library gathers.
local function begin_call(keys, args)
  KEYS, ARGV = keys, args
  K = {
    meta = keys[1], backlog = keys[2], events = keys[3], expiry = keys[4], waiters = keys[5],
    pending = keys[6], stale = keys[7], deliveries = keys[8], first = keys[9], polls = keys[10],
    scheduled = keys[11], dead = keys[12], errors = keys[13], failures = keys[14], reasons = keys[15],
    ttl = keys[16], charged = keys[17], topicBytes = keys[18], realized = keys[19], gone = keys[20],
    delayed = keys[21], holders = keys[22], keyof = keys[23], behind = keys[24], ready = keys[25],
    memory = keys[26], forgets = keys[27], copies = keys[28], freed = keys[29],
  }
  -- none for a script that reads many consumers' keys, each as its own begin_call
  CONSUMER = K.meta and string.match(K.meta, '{c:(.*)}:meta$')
  held_history_ms = 2592000000
  ttl_in_use = nil
  expiry_in_use = nil
  handout_records = {}
  gone_in_use = nil
  ordering_in_use = nil
  keys_passed = false
  dropped_dead = false
  segments = {}
  call_now = nil
  -- set by settings(): memory is never read or written for a consumer whose settings were not read
  memory_salt = nil
  spool_change = {bytes = 0, events = 0, figures = false}
  charges_in_use = nil
  counters = nil
  let_go_copies = {}
  answers_let_go = false
  freed_filed = false
end
