-- Deletes a consumer with everything spooled for it. Its batch keys, ack memory and histories of
-- acked events expire alone;
-- the histories of the events it held are given the expiry they would have had on leaving.
-- KEYS[EXTRA_KEY] the consumer's idempotent events (publish.lua)
-- Returns 1 when it existed, 0 otherwise.
if redis.call('EXISTS', K.meta) == 0 then return 0 end
-- hand-out entries waiting in the deliveries entries join their events' lists first
local deliveries = redis.call('HGETALL', K.deliveries)
for i = 1, #deliveries, 2 do
  local handout = waiting_handout(deliveries[i + 1])
  if handout then redis.call('RPUSH', history_key(deliveries[i]), handout) end
end
for _, id in ipairs(redis.call('HKEYS', K.events)) do
  redis.call('PEXPIRE', history_key(id), HISTORY_AFTER_MS)
end
redis.call('UNLINK', K.meta, K.backlog, K.events, K.expiry, K.waiters, K.pending, K.stale,
  K.deliveries, K.first, K.polls,
  K.scheduled, K.dead, K.errors, K.failures, K.reasons, K.ttl, K.charged, K.topicBytes, K.realized, KEYS[EXTRA_KEY])
return 1
