-- Sets a consumer's due time after the scheduler worked on it.
-- KEYS[1] due index ZSET, KEYS[2] versions HASH
-- ARGV[1] consumer name, ARGV[2] next due time (-1: nothing timed), ARGV[3] version seen before
-- the work ('' if none). If someone lowered the entry meanwhile, the new time may only lower it.
local version = redis.call('HGET', KEYS[2], ARGV[1]) or ''
local next = tonumber(ARGV[2])
if version == ARGV[3] then
  if next < 0 then
    redis.call('ZREM', KEYS[1], ARGV[1])
    redis.call('HDEL', KEYS[2], ARGV[1])
  else
    redis.call('ZADD', KEYS[1], next, ARGV[1])
  end
elseif next >= 0 then
  redis.call('ZADD', KEYS[1], 'LT', next, ARGV[1])
end
return 1
