-- Moves a consumer's backlog as 0.6.0 kept it (a sorted set, eventId -> arrival sequence) to the
-- head of its backlog list, in arrival order, at most ARGV[1] events a call: the node calls it for
-- every consumer as it starts, until nothing is left.
-- KEYS[EXTRA_KEY] the sorted set
-- Returns how many events are left in it.
local legacy = KEYS[EXTRA_KEY]
if redis.call('TYPE', legacy).ok ~= 'zset' then return 0 end
-- the latest first: each piece goes ahead of the one moved before it
local latest = redis.call('ZRANGE', legacy, -tonumber(ARGV[1]), -1, 'WITHSCORES')
local pushed = {}
for i = #latest - 1, 1, -2 do
  table.insert(pushed, latest[i + 1])
  table.insert(pushed, latest[i])
end
call_each('LPUSH', K.backlog, pushed, 2)
redis.call('ZREMRANGEBYRANK', legacy, -tonumber(ARGV[1]), -1)
return redis.call('ZCARD', legacy)
