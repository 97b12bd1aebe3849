-- Holds room in the consumer's own quota (quotaBytes, quotaEvents) for a publish round's events
-- before any consumer's spool call takes them: a consumer that refuses for all
-- (rejectPublishWhenRefused) refuses here, while no other consumer holds the events yet (one that
-- did could hand them out before a take-back). The round's spool call for this consumer takes the
-- hold (publish.lua, ARGV[3]); a hold whose call never comes (its node went) goes after ARGV[2] ms.
-- ARGV[1] the hold's id, ARGV[2] how long it is kept (ms), ARGV[3..] the sizes of the round's
-- events for this consumer, in order
-- Returns {1 (room held) or 0 (refused: over the quota) per event}, -1 when the consumer does not
-- exist, -2 when it is disabled, -3 when it does not refuse for all (its settings changed since the
-- node read them): then it holds nothing, and its spool call skips what it cannot take.
local cfg = settings()
if not cfg then return -1 end
if not cfg.refusesForAll then return -3 end
if not cfg.enabled then return -2 end
local quota = own_quota(cfg)
local bytes, events, verdicts = 0, 0, {}
for i = 3, #ARGV do
  local size = tonumber(ARGV[i])
  if quota.fits(size) then
    quota.take(size)
    bytes, events = bytes + size, events + 1
    verdicts[i - 2] = 1
  else
    verdicts[i - 2] = 0
  end
end
if events > 0 then hold_own(ARGV[1], bytes, events, tonumber(ARGV[2])) end
return verdicts
