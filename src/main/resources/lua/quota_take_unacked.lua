-- Takes room under the gateway-wide maxUnackedTotal for one poll, held until quota_settle gives it
-- back with the consumer's new figures. Atomic, so polls on any nodes never overshoot together.
-- ARGV[1] hold id ("<id>:<consumer>", realized by that consumer's poll script), ARGV[2] ms after which an unsettled hold is given back, ARGV[3] the limit,
-- ARGV[4] how many events the poll would like to make unacked at most, ARGV[5] 'one' on a ledger
-- of one shard (the limit is judged whole), else 'try' or 'final' (judged against this shard's
-- budget), ARGV[6] the bank's grant of 'u' to this shard to learn first ('' for none).
-- Returns the number it may make unacked (0 when the limit is reached: it hands out only stale
-- deliveries, which are unacked already); in 'try' mode, -n instead of less than it wants, n
-- lacking (it holds nothing then: the node asks the bank, then tries 'final').
local now = now_ms()
give_back_expired(now)
learn_grant('u', tonumber(ARGV[6]))
local wanted = tonumber(ARGV[4])
local granted = math.max(0, math.min(wanted, budget('u', tonumber(ARGV[3]), ARGV[5] ~= 'one') - usage('u')))
if granted < wanted and ARGV[5] == 'try' then
  return granted - wanted
end
if granted < wanted then
  -- polls are being held back: quota_settle says when there is room again
  redis.call('HSET', USAGE, 'held:unacked', '1')
end
if granted > 0 then
  add('u', granted)
  redis.call('HSET', HOLDS, ARGV[1], cjson.encode({{'u', granted}}))
  redis.call('ZADD', HOLD_ENDS, now + tonumber(ARGV[2]), ARGV[1])
end
return granted
