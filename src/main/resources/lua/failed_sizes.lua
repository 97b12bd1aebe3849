-- The sizes of events of the dead-letter or error queue, for the ledger to judge a redrive of them.
-- ARGV[1] 'dead' or 'errors', ARGV[2] '*' for the head of the queue, else ''; ARGV[3] most events
-- (for '*'); ARGV[4..] the eventIds (for '')
-- Returns {eventId1, bytes1, ...} of those in the queue, in order, or -1 when the consumer does
-- not exist.
local cfg = settings()
if not cfg then return -1 end
local queue = ARGV[1] == 'dead' and K.dead or K.errors
local ids = {}
if ARGV[2] == '*' then
  ids = redis.call('ZRANGE', queue, 0, tonumber(ARGV[3]) - 1)
else
  for i = 4, #ARGV do table.insert(ids, ARGV[i]) end
end
local out = {}
for _, id in ipairs(ids) do
  if redis.call('ZSCORE', queue, id) then
    table.insert(out, id)
    local value = redis.call('HGET', K.events, id)
    table.insert(out, value and event_bytes(value) or 0)
  end
end
return out
