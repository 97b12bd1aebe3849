-- The consumers whose scheduler work is due now by Redis' clock, at most ARGV[1] of them.
-- KEYS[1] due index ZSET
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
