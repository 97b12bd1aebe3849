-- A consumer's counts and totals, as name/value pairs (ConsumerRoutes shapes them), or -1 if the
-- consumer is unknown. Times are Redis time; -1 or 0 when there is none.
local cfg = settings()
if not cfg then return -1 end
local now = clock()
local pending = redis.call('ZCARD', K.pending)
local stale = redis.call('ZCARD', K.stale)
-- the publish time of the first live pair among the backlog's first HEAD_LOOK (arrival order is
-- publish order but for redriven and delayed events, which go to the end), else of the first pair
local HEAD_LOOK = 100
local oldestBacklog = -1
local headIds = ids_of(redis.call('LRANGE', K.backlog, 0, 2 * HEAD_LOOK - 1))
local dead = dead_pairs(headIds)
for _, id in ipairs(headIds) do
  if not dead[id] then
    oldestBacklog = published_at(id)
    break
  end
end
-- with ordering by key, backlog_size counts those whose turn came too (K.ready): they may be older
local backlog = backlog_size()
local firstReady = uses_ordering() and redis.call('ZRANGE', K.ready, 0, 0)[1]
local inList = backlog - (firstReady and redis.call('ZCARD', K.ready) or 0)
if oldestBacklog < 0 and inList > 0 then oldestBacklog = published_at(headIds[1]) end
if firstReady and (oldestBacklog < 0 or published_at(firstReady) < oldestBacklog) then
  oldestBacklog = published_at(firstReady)
end
local result = {
  'now', now,
  'backlog', backlog,
  'unacked', pending + stale,
  'stale', redis.call('ZCOUNT', K.pending, '-inf', now) + stale,
  'scheduled', redis.call('ZCARD', K.scheduled),
  'delayed', redis.call('ZCARD', K.delayed),
  'waitingOnKey', redis.call('ZCARD', K.behind),
  'deadLetters', redis.call('ZCARD', K.dead),
  'errors', redis.call('ZCARD', K.errors),
  'oldestBacklogPublishedAt', oldestBacklog,
  'oldestUnackedFirstDelivery', oldest_unacked(cfg),
}
local fields = {'spooledBytes', 'spooledEvents', 'published', 'delivered', 'acked', 'redelivered', 'deadLettered',
  'rejected', 'dropped', 'expired', 'throttled', 'blocks', 'blockedUntil', 'discarded'}
local values = redis.call('HMGET', K.meta, unpack(fields))
for i, name in ipairs(fields) do
  table.insert(result, name)
  table.insert(result, tonumber(values[i] or '0'))
end
return result
