-- Deletes a consumer with everything spooled for it, in a step whose cost does not grow with what it
-- held: its keys are unlinked (Redis frees them in the background); its batch keys expire by
-- themselves.
-- KEYS[EXTRA_KEY] the consumer's idempotent events (publish.lua)
-- Returns 1 when it existed, 0 otherwise.
if redis.call('EXISTS', K.meta) == 0 then return 0 end
redis.call('UNLINK', K.meta, K.backlog, K.events, K.expiry, K.waiters, K.pending, K.stale,
  K.deliveries, K.first, K.polls,
  K.scheduled, K.dead, K.errors, K.failures, K.reasons, K.ttl, K.charged, K.topicBytes, K.realized, K.gone,
  K.delayed, K.holders, K.keyof, K.behind, K.ready, K.memory, K.forgets,
  KEYS[EXTRA_KEY])
return 1
