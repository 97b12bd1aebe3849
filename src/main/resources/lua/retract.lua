-- Takes back events a publish round spooled for this consumer because another matching consumer
-- refused them for all in its own spool script (disabled, or over its own quota, after the node
-- read its settings): each event still in the backlog or waiting out its delay, never handed out,
-- leaves as if never published.
-- KEYS[EXTRA_KEY] the consumer's idempotent events (publish.lua): a taken-back event is forgotten
-- there too, so that storing it again (or a retry of its publish) is not mistaken for a repeat
-- ARGV the eventIds
-- Returns per eventId 1 (taken back) or 0 (handed out already, or not here), then the copies it let
-- go of, for the node to release; or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
answers_let_go = true
local out, taken = {}, 0
for i, id in ipairs(ARGV) do
  local waiting, stub = in_backlog(id)
  if waiting or redis.call('ZSCORE', K.delayed, id) then
    leave_queue(id)
    spool_less(id, forget(id, stub))
    redis.call('ZREM', KEYS[EXTRA_KEY], id)
    taken = taken + 1
    out[i] = 1
  else
    out[i] = 0
  end
end
count({published = -taken})
-- a holder taken back lets its key's next event go
if keys_passed then wake_waiter(cfg) end
out[#ARGV + 1] = let_go_copies
return out
