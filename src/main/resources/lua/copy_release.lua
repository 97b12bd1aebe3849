-- A consumer lets go of a copy: it holds none of its events and never will again (one acquisition
-- per copy, docs/internals.md). The copy goes with its last holder mark.
-- KEYS[1] herald:{p:<copyId>}, ARGV[1] the consumer.
-- Repeating a release changes nothing: only a mark that was there counts down. Returns the marks
-- left (0: the copy is gone), or -1 when that mark was gone already.
if redis.call('HDEL', KEYS[1], 'h:' .. ARGV[1]) == 0 then return -1 end
local left = redis.call('HINCRBY', KEYS[1], 'n', -1)
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
return left
