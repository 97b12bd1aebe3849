-- Creates a consumer or replaces its settings; its spooled events are kept.
-- ARGV[1] a fresh random salt (kept if the consumer exists), ARGV[2..] setting name/value pairs.
-- Returns {1 when the consumer was created else 0, the retention its stored copies are known to
-- be kept for (copiesRetentionMs; docs/internals.md, "Retention"), the settings' generation}: when
-- its new retentionMs is longer, the node pushes their expiry and then records it
-- (copies_covered.lua), unless the settings changed again meanwhile.
local recorded = redis.call('HGET', K.meta, 'copiesRetentionMs')
local created = redis.call('HSETNX', K.meta, 'salt', ARGV[1])
-- its arrival sequence starts anew: what a predecessor of the same name remembered must go (one
-- deleted by a version before 0.9.0 left it)
if created == 1 then redis.call('UNLINK', K.memory, K.forgets) end
for i = 2, #ARGV, 2 do
  redis.call('HSET', K.meta, ARGV[i], ARGV[i + 1])
end
local retention = tonumber(redis.call('HGET', K.meta, 'retentionMs'))
-- a new consumer holds no copies; one stored before the record was kept has copies of unknown length
local covered = created == 1 and retention or tonumber(recorded or '0')
-- lowered: the copies of its rounds from now on are kept for the lower one
if covered > retention then covered = retention end
redis.call('HSET', K.meta, 'copiesRetentionMs', covered)
local generation = redis.call('HINCRBY', K.meta, 'settingsGeneration', 1)
-- ordering switched off: the events behind their keys may go now, and a parked poll takes them
if created == 0 then wake_waiter(settings()) end
return {created, covered, generation}
