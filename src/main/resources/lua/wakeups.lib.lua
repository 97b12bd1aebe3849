-- Parked polls woken, full push windows told, and the poll rate limit.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

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
