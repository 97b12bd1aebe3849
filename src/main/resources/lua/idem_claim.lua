-- Claims idempotency keys of one topic for the events of a publish round, in order.
-- KEYS one key per event (herald:{t:<topic>}:idem:<idempotencyKey>), ARGV[1] the dedup window in ms,
-- ARGV[2..] the eventId each event was given.
-- Returns per event: 'N' (claimed: spool it), 'P <eventId>' (claimed earlier, by a publish whose
-- outcome is not known yet, or by an event before it in this call) or 'D <eventId> <matched>'
-- (an earlier publish stored it: a duplicate).
local answers = {}
for i, key in ipairs(KEYS) do
  local claim = redis.call('GET', key)
  if claim then
    answers[i] = claim
  else
    redis.call('SET', key, 'P ' .. ARGV[i + 1], 'PX', ARGV[1])
    answers[i] = 'N'
  end
end
return answers
