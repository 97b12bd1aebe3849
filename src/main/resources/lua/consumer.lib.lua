-- Shared by every per-consumer script, with the parts that follow it (Script.LIBRARY_PARTS: one
-- per structure, history.lib.lua to begin.lib.lua, joined in that order). On Redis 7 and later it is
-- loaded once as a function library, each script a function of it; on earlier versions it is
-- prepended to each script (see Script.java). Either way every call starts with begin_call: what
-- depends on the call (its keys and arguments, what the library gathers while it runs) lives in the
-- locals it sets.
-- Every per-consumer script receives the same KEYS, all under the consumer's hash tag:
-- KEYS[1] meta        HASH   settings, counters, salt, arrival sequence
-- KEYS[2] backlog     LIST   eventId, arrival sequence, eventId, sequence, ...: the events spooled
--                            and not handed out since, in arrival order; a pair whose eventId is in
--                            KEYS[20] is dead (see leave_backlog); in the packed layout a sequence
--                            may carry the event's stub, "<seq>:<stub>", for one with no KEYS[3]
--                            entry (see pair_member)
-- KEYS[3] events      HASH   eventId -> event blob (JSON members, payload as the publisher sent it),
--                            or its stub (docs/internals.md)
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
-- Call after adding `added` fields. (Its constants in a block: a script run by EVALSHA is one chunk
-- with the library, at most 200 locals at once.)
local as_hash_table
do
  local LISTPACK_AT_MOST = 64
  local HASH_TABLE_FIELD = '~hash-table'
  -- 65 characters (the library's loading code may not call string functions)
  local HASH_TABLE_VALUE = '-----------------------------------------------------------------'
  function as_hash_table(key, added)
    if added > 0 and redis.call('HLEN', key) > LISTPACK_AT_MOST then
      redis.call('HSETNX', key, HASH_TABLE_FIELD, HASH_TABLE_VALUE)
    end
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
