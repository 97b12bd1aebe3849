-- Makes the named deliveries stale at once (a socket closed with them unacked and the consumer has
-- redeliverOnDisconnect): each waits out its backoff from now, then goes to another client, or
-- goes to the dead-letter queue when another delivery would exceed maxDeliveries.
-- Only an event's latest delivery, still pending, is released.
-- ARGV the ackIds
-- Returns {now, the time the consumer next needs the scheduler or -1 if never}, or -1 when the
-- consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local now = clock()
local released = 0
for i = 1, #ARGV do
  local id = is_out(ARGV[i])
  if id then
    -- as if its deadline had passed now: counted against maxDeliveries like any other
    lapse(cfg, id, now, now)
    released = released + 1
  end
end
write_memory()
if released > 0 then wake_waiter(cfg) end
return {now, next_due(cfg, next_redelivery(now))}
