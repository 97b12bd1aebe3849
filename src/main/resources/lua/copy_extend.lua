-- Keeps a stored copy at least ARGV[1] ms more (docs/internals.md, "Retention"): its holders' retention
-- grew. Never shortens it (PEXPIRE GT is Redis 7 only). KEYS[1] herald:{p:<copyId>}.
-- Returns 1 when it pushed the expiry, 0 when it was far enough already or the copy is gone.
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left >= tonumber(ARGV[1]) then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
