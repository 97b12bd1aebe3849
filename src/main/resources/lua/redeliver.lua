-- One scheduler step for one consumer: deliveries past their deadline become stale, events past
-- their retention leave. Bounded by ARGV[1] per kind of work, so its cost follows the work due.
-- ARGV[1] most entries to move per kind, ARGV[2] consumer name, ARGV[3] wake-up channel
-- Returns the time the consumer next needs the scheduler, or -1 when it holds nothing timed.
local cfg = settings()
if not cfg then return -1 end
local now = now_ms()
local limit = tonumber(ARGV[1])
make_due_stale(cfg, now, limit)
expire_due(cfg, now, limit)

if redis.call('EXISTS', K.listening) == 1 and redis.call('ZCOUNT', K.stale, '-inf', now) > 0 then
  redis.call('PUBLISH', ARGV[3], ARGV[2])
end

return next_due(cfg,
  tonumber(redis.call('ZRANGE', K.pending, 0, 0, 'WITHSCORES')[2]),
  tonumber(redis.call('ZRANGEBYSCORE', K.stale, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]))
