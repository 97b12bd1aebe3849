-- Records that the consumer's stored copies are kept for retentionMs ARGV[2] (docs/internals.md,
-- "Retention"), after the node pushed their expiry for the settings of generation ARGV[1]; a change
-- of its settings since then (consumer_put.lua) keeps its own record, so this one is not written.
-- Returns 1 when it wrote the record.
if redis.call('HGET', K.meta, 'settingsGeneration') ~= ARGV[1] then return 0 end
redis.call('HSET', K.meta, 'copiesRetentionMs', ARGV[2])
return 1
