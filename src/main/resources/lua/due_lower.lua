-- Lowers a consumer's due time in the scheduler's index (adds it when absent).
-- KEYS[1] due index ZSET, KEYS[2] versions HASH
-- ARGV[1] consumer name, ARGV[2] time its work falls due
-- The version bump tells a scheduler that is raising the same entry that it changed meanwhile.
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
