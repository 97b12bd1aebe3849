-- Shared by every per-consumer script: it is prepended to each of them when they are loaded.
-- Every per-consumer script receives the same KEYS, all under the consumer's hash tag:
-- KEYS[1] meta        HASH   settings, counters, salt, arrival sequence
-- KEYS[2] backlog     ZSET   eventId -> arrival sequence: spooled, never handed out
-- KEYS[3] events      HASH   eventId -> event blob (JSON members, payload as the publisher sent it)
-- KEYS[4] expiry      ZSET   eventId -> time the event leaves the consumer (retention)
-- KEYS[5] listening   STRING present while some node waits for events of this consumer
-- KEYS[6] pending     ZSET   eventId -> ack deadline: handed out, not acked, deadline ahead
-- KEYS[7] stale       ZSET   eventId -> time it may be handed out again (deadline + backoff)
-- KEYS[8] deliveries  HASH   eventId -> "deliveryCount:arrivalSequence"
-- KEYS[9] first       ZSET   eventId -> time of its first hand-out
-- Scripts may add keys of their own from KEYS[10] on.
local K = {
  meta = KEYS[1], backlog = KEYS[2], events = KEYS[3], expiry = KEYS[4], listening = KEYS[5],
  pending = KEYS[6], stale = KEYS[7], deliveries = KEYS[8], first = KEYS[9],
}
-- Acked events are remembered in bitmaps of 65536 arrival sequences each, so remembering an ack
-- costs one bit rather than a sorted-set entry. The key shares the hash tag of KEYS[1].
local ACKED_SEGMENT_BITS = 65536
local ACKED_MEMORY_MS = 600000

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The consumer's settings, or nil when the consumer does not exist (deleted meanwhile).
local function settings()
  local v = redis.call('HMGET', K.meta, 'salt', 'ackMode', 'ackTimeoutMs', 'maxUnacked',
    'retentionMs', 'initialDelayMs', 'multiplier', 'maxDelayMs')
  if not v[1] then return nil end
  return {
    salt = v[1], auto = v[2] == 'auto', ackTimeoutMs = tonumber(v[3]), maxUnacked = tonumber(v[4]),
    retentionMs = tonumber(v[5]), initialDelayMs = tonumber(v[6]), multiplier = tonumber(v[7]),
    maxDelayMs = tonumber(v[8]),
  }
end

-- Redelivery backoff after the n-th delivery missed its deadline.
local function backoff(cfg, n)
  return math.min(cfg.initialDelayMs * cfg.multiplier ^ (n - 1), cfg.maxDelayMs)
end

local function acked_segment(seq)
  return string.sub(K.meta, 1, -5) .. 'acked:' .. math.floor(seq / ACKED_SEGMENT_BITS)
end

-- The unguessable part of an ackId: only this consumer's salt produces it.
local function ack_token(cfg, id, seq, n)
  return string.sub(redis.sha1hex(cfg.salt .. ':' .. id .. ':' .. seq .. ':' .. n), 1, 20)
end

local function delivery_state(id)
  local v = redis.call('HGET', K.deliveries, id)
  if not v then return nil end
  local n, seq = string.match(v, '^(%d+):(%d+)$')
  return tonumber(n), tonumber(seq)
end

-- Removes an event from every structure of the consumer and releases its spooled bytes.
local function forget(id)
  local bytes = redis.call('HSTRLEN', K.events, id)
  redis.call('HDEL', K.events, id)
  redis.call('HDEL', K.deliveries, id)
  redis.call('ZREM', K.backlog, id)
  redis.call('ZREM', K.pending, id)
  redis.call('ZREM', K.stale, id)
  redis.call('ZREM', K.first, id)
  redis.call('ZREM', K.expiry, id)
  redis.call('HINCRBY', K.meta, 'spooledBytes', -bytes)
end

local function remember_ack(seq)
  local key = acked_segment(seq)
  redis.call('SETBIT', key, seq % ACKED_SEGMENT_BITS, 1)
  redis.call('PEXPIRE', key, ACKED_MEMORY_MS)
end

local function was_acked(seq)
  return redis.call('GETBIT', acked_segment(seq), seq % ACKED_SEGMENT_BITS) == 1
end

-- Deliveries whose deadline passed become stale: they wait out their backoff before the next
-- hand-out. Bounded by limit so one call never runs long; returns how many moved.
local function make_due_stale(cfg, now, limit)
  local due = redis.call('ZRANGEBYSCORE', K.pending, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #due, 2 do
    local id, deadline = due[i], tonumber(due[i + 1])
    local n = delivery_state(id) or 1
    redis.call('ZADD', K.stale, deadline + backoff(cfg, n), id)
    redis.call('ZREM', K.pending, id)
  end
  return #due / 2
end

-- Events past their retention leave the consumer (counted); bounded by limit.
local function expire_due(now, limit)
  local due = redis.call('ZRANGEBYSCORE', K.expiry, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(due) do
    forget(id)
  end
  if #due > 0 then
    redis.call('HINCRBY', K.meta, 'expired', #due)
  end
  return #due
end
