-- The consumer's spool figures, its own quota, its counters and the ledger's holds.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

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
