-- The rate limit for a request that hands nothing out itself: a WebSocket subscribe counts as a
-- poll request (ARGV[1] its id); a WebSocket upgrade only asks whether the consumer is blocked
-- (ARGV[1] '').
-- Returns 0 when the request may go on, the ms left of the block when it is refused, -1 when the
-- consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
return throttle(cfg, clock(), ARGV[1] ~= '', ARGV[1]) or 0
