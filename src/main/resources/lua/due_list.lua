-- The consumers whose scheduler work is due now by Redis' clock, at most ARGV[1] of them.
-- KEYS[1] due index ZSET
-- Returns {now, when the first entry not due yet falls due (-1: none), when the earliest due one
-- fell due (-1: none), consumer...}.
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
local after = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
local result = {now, tonumber(after) or -1, tonumber(due[2]) or -1}
for i = 1, #due, 2 do table.insert(result, due[i]) end
return result
