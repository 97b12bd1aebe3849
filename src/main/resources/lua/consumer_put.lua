-- Creates a consumer or replaces its settings; its spooled events are kept.
-- ARGV[1] a fresh random salt (kept if the consumer exists), ARGV[2..] setting name/value pairs.
-- Returns {1 when the consumer was created else 0, the retention its stored copies are known to
-- be kept for (copiesRetentionMs; docs/internals.md, "Retention")}: when its new retentionMs is
-- longer, the node pushes their expiry and then records it there.
local before = redis.call('HMGET', K.meta, 'retentionMs', 'copiesRetentionMs')
local created = redis.call('HSETNX', K.meta, 'salt', ARGV[1])
-- its arrival sequence starts anew: what a predecessor of the same name remembered must go (one
-- deleted by a version before 0.9.0 left it)
if created == 1 then redis.call('UNLINK', K.memory, K.forgets) end
for i = 2, #ARGV, 2 do
  redis.call('HSET', K.meta, ARGV[i], ARGV[i + 1])
end
local covered = before[2] or before[1]
if created == 1 then
  -- a new consumer holds no copies yet: those of its first rounds are written for its retention
  covered = redis.call('HGET', K.meta, 'retentionMs')
  redis.call('HSET', K.meta, 'copiesRetentionMs', covered)
end
-- ordering switched off: the events behind their keys may go now, and a parked poll takes them
if created == 0 then wake_waiter(settings()) end
return {created, tonumber(covered)}
