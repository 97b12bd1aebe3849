-- Makes the named deliveries stale at once (a socket closed with them unacked and the consumer has
-- redeliverOnDisconnect): each waits out its backoff from now, then goes to another client.
-- Only an event's latest delivery, still pending, is released.
-- ARGV the ackIds
-- Returns {now, the time the consumer next needs the scheduler or -1 if never}, or {-1} when the
-- consumer does not exist.
local cfg = settings()
if not cfg then return {-1} end
local now = now_ms()
local released = 0
for i = 1, #ARGV do
  local id, seq, n, token = string.match(ARGV[i], '^([%x%-]+)%.(%d+)%.(%d+)%.(%x+)$')
  if id and token == ack_token(cfg, id, seq, n) and delivery_state(id) == n
      and redis.call('ZREM', K.pending, id) == 1 then
    redis.call('ZADD', K.stale, now + backoff(cfg, tonumber(n)), id)
    note(id, 'X ' .. now)
    redis.call('ZADD', K.expiry, (ends_at(cfg, id)), id)
    released = released + 1
  end
end
if released > 0 then wake_waiter(cfg) end
return {now, next_due(cfg, next_redelivery(now))}
