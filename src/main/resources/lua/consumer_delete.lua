-- Deletes a consumer with everything spooled for it, in a step whose cost does not grow with what it
-- held: its keys are unlinked (Redis frees them in the background); its batch keys expire by
-- themselves.
-- KEYS[EXTRA_KEY] the consumer's idempotent events (publish.lua), KEYS[EXTRA_KEY + 1] where the
-- copies it held go (herald:{c:<name>}:leaving)
-- The copies it held (docs/internals.md) are set aside in KEYS[EXTRA_KEY + 1], for the node to
-- release: copies, and those of freed (a predecessor's still there is replaced: its copies stay
-- until their expiry).
-- Returns {1, that key} when it existed and held copies, 1 when it held none, 0 when it did not exist.
if redis.call('EXISTS', K.meta) == 0 then return 0 end
local leaving
if redis.call('EXISTS', K.copies, K.freed) > 0 then
  leaving = KEYS[EXTRA_KEY + 1]
  if redis.call('EXISTS', K.copies) == 1 then redis.call('RENAME', K.copies, leaving) else redis.call('UNLINK', leaving) end
  for _, copy in ipairs(redis.call('LRANGE', K.freed, 0, -1)) do
    redis.call('HSET', leaving, copy, 0)
  end
  redis.call('UNLINK', K.freed)
  -- the copies it names are kept no longer (Copies.keptMs): a drain its node left unfinished leaves
  -- them to their expiry, and this key goes with them
  redis.call('PEXPIRE', leaving, 2 * tonumber(redis.call('HGET', K.meta, 'retentionMs')) + 3600000)
end
redis.call('UNLINK', K.meta, K.backlog, K.events, K.expiry, K.waiters, K.pending, K.stale,
  K.deliveries, K.first, K.polls,
  K.scheduled, K.dead, K.errors, K.failures, K.reasons, K.ttl, K.charged, K.topicBytes, K.realized, K.gone,
  K.delayed, K.holders, K.keyof, K.behind, K.ready, K.memory, K.forgets,
  KEYS[EXTRA_KEY])
if leaving then return {1, leaving} end
return 1
