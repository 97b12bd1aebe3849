-- A consumer's counts and totals.
-- Returns {now, backlog, unacked, stale, oldestBacklogPublishedAt, oldestUnackedFirstDelivery,
--          spooledBytes, published, delivered, acked, redelivered, expired, throttled, blocks,
--          blockedUntil (0 if not blocked)}, or -1 if unknown.
local cfg = settings()
if not cfg then return -1 end
local now = now_ms()
local pending = redis.call('ZCARD', K.pending)
local stale = redis.call('ZCARD', K.stale)
local overdue = redis.call('ZCOUNT', K.pending, '-inf', now)
local oldestBacklog = -1
local head = redis.call('ZRANGE', K.backlog, 0, 0)
if head[1] then oldestBacklog = published_at(head[1]) end
local oldestUnacked = -1
local first = redis.call('ZRANGE', K.first, 0, 0, 'WITHSCORES')
if first[2] then oldestUnacked = tonumber(first[2]) end
local totals = redis.call('HMGET', K.meta, 'spooledBytes', 'published', 'delivered', 'acked',
  'redelivered', 'expired', 'throttled', 'blocks', 'blockedUntil')
local result = {now, redis.call('ZCARD', K.backlog), pending + stale, overdue + stale,
  oldestBacklog, oldestUnacked}
for _, v in ipairs(totals) do
  table.insert(result, tonumber(v or '0'))
end
if result[#result] <= now then result[#result] = 0 end
return result
