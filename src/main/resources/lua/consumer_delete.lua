-- Deletes a consumer with everything spooled for it. Its batch keys and ack memory expire alone.
-- Returns 1 when it existed, 0 otherwise.
if redis.call('EXISTS', K.meta) == 0 then return 0 end
redis.call('UNLINK', K.meta, K.backlog, K.events, K.expiry, K.waiters, K.pending, K.stale,
  K.deliveries, K.first, K.polls,
  K.scheduled, K.dead, K.errors, K.failures, K.reasons, K.ttl)
return 1
