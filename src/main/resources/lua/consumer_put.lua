-- Creates a consumer or replaces its settings; its spooled events are kept.
-- ARGV[1] a fresh random salt (kept if the consumer exists), ARGV[2..] setting name/value pairs.
-- Returns 1 when the consumer was created, 0 when it existed.
local created = redis.call('HSETNX', K.meta, 'salt', ARGV[1])
for i = 2, #ARGV, 2 do
  redis.call('HSET', K.meta, ARGV[i], ARGV[i + 1])
end
return created
