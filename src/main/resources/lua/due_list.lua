-- The consumers whose scheduler work is due now by Redis' clock, at most ARGV[1] of them.
-- KEYS[1] due index ZSET
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, tonumber(ARGV[1]))
