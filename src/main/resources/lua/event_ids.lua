-- Reserves eventIds for one publish request: Redis' time and a gateway-wide sequence, so that ids
-- sort in publish order across every node whatever their clocks say.
-- KEYS[1] id clock HASH {ms, seq}
-- ARGV[1] how many ids
-- Returns {publishedAt ms, first sequence number}. The time never goes back, even if Redis' does.
local now = now_ms()
local last = tonumber(redis.call('HGET', KEYS[1], 'ms') or '0')
if now < last then now = last end
redis.call('HSET', KEYS[1], 'ms', now)
local count = tonumber(ARGV[1])
return {now, redis.call('HINCRBY', KEYS[1], 'seq', count) - count + 1}
