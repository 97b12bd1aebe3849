-- Passes a wake-up on: the poll it was for was gone when it arrived.
-- Returns 1, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
wake_waiter(cfg)
return 1
