-- Lowers consumers' due times in the scheduler's index (adds them when absent).
-- KEYS[1] due index ZSET, KEYS[2] versions HASH
-- ARGV pairs of consumer name, time its work falls due
-- The version bump tells a scheduler that is raising the same entry that it changed meanwhile.
for i = 1, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'LT', ARGV[i + 1], ARGV[i])
  redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
end
return 1
