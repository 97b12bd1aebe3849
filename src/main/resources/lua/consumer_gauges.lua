-- The figures /metrics and the console show of consumers (ConsumerGauges). Either the keys of one
-- consumer as KEYS, or no KEYS and many consumers' keys as ARGV: ARGV[1] is how many keys each has,
-- then each one's keys in the usual order, all on this server (on a Redis Cluster the node groups
-- consumers by their slot's primary; the function may read keys of several slots of its server).
-- Writes nothing.
-- Returns {now, then per consumer {} for one unknown, else {backlog, unacked, dead letters, first
-- hand-out of the oldest unacked (-1: none), throttle blocks, dead letters for MAX_DELIVERIES,
-- TTL_EXPIRED and RETENTION, rejected events, stale, errors, published, delivered, acked, blocked
-- until (0: not blocked)}}.
local consumers = {}
if #KEYS > 0 then
  consumers[1] = KEYS
else
  local per = tonumber(ARGV[1])
  for first = 2, #ARGV, per do table.insert(consumers, {unpack(ARGV, first, first + per - 1)}) end
end
local now = now_ms()
local result = {now}
for _, keys in ipairs(consumers) do
  begin_call(keys, {})
  -- not settings(): of them only the ack timeout matters here, and reading them all would double
  -- what a consumer costs (10,000 consumers are read in a pass)
  local v = redis.call('HMGET', K.meta, 'salt', 'ackTimeoutMs', 'blocks', 'deadLettered:MAX_DELIVERIES',
    'deadLettered:TTL_EXPIRED', 'deadLettered:RETENTION', 'rejected', 'published', 'delivered', 'acked',
    'blockedUntil')
  local figures = {}
  if v[1] then
    local stale = redis.call('ZCARD', K.stale)
    figures = {backlog_size(), redis.call('ZCARD', K.pending) + stale,
      redis.call('ZCARD', K.dead), oldest_unacked({ackTimeoutMs = tonumber(v[2])})}
    for i = 3, 7 do table.insert(figures, tonumber(v[i] or '0')) end
    table.insert(figures, redis.call('ZCOUNT', K.pending, '-inf', now) + stale)
    table.insert(figures, redis.call('ZCARD', K.errors))
    for i = 8, 10 do table.insert(figures, tonumber(v[i] or '0')) end
    local blockedUntil = tonumber(v[11] or '0')
    table.insert(figures, blockedUntil > now and blockedUntil or 0)
  end
  table.insert(result, figures)
end
return result
