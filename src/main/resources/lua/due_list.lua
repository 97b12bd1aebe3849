-- The consumers whose scheduler work is due now by Redis' clock, at most ARGV[1] of them.
-- KEYS[1] due index ZSET
-- Returns {now, when the first entry not due yet falls due (-1: none), consumer...}.
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local after = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
table.insert(due, 1, now)
table.insert(due, 2, tonumber(after) or -1)
return due
