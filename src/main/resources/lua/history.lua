-- One event's state and history entries (see note() in consumer.lib.lua).
-- ARGV[1] the eventId
-- Returns {state, entries...}, {} when nothing is known of the event (never spooled for this
-- consumer, or gone longer than the history is kept), or -1 when the consumer does not exist.
-- States: BACKLOG, DELIVERED, SCHEDULED, DEAD_LETTERED, ERROR while held; ACKED, DROPPED, EXPIRED
-- after it left.
local cfg = settings()
if not cfg then return -1 end
local id = ARGV[1]
local state
if redis.call('ZSCORE', K.backlog, id) then
  state = 'BACKLOG'
elseif redis.call('ZSCORE', K.pending, id) or redis.call('ZSCORE', K.stale, id) then
  state = 'DELIVERED'
elseif redis.call('ZSCORE', K.scheduled, id) then
  state = 'SCHEDULED'
elseif redis.call('ZSCORE', K.dead, id) then
  state = 'DEAD_LETTERED'
elseif redis.call('ZSCORE', K.errors, id) then
  state = 'ERROR'
end
local entries = redis.call('LRANGE', history_key(id), 0, -1)
-- the latest hand-out's entry waits in its deliveries entry
local handout = waiting_handout(redis.call('HGET', K.deliveries, id))
if handout then table.insert(entries, handout) end
if #entries == 0 then
  -- handed out once and acked: both entries are in the bucket of acks of that time
  local bucket = math.floor(now_ms() / HISTORY_AFTER_MS)
  local acked = redis.call('HGET', acked_history_key(bucket), id) or redis.call('HGET', acked_history_key(bucket - 1), id)
  for entry in string.gmatch(acked or '', '[^\n]+') do table.insert(entries, entry) end
end
if not state then
  local last = entries[#entries]
  if not last then return {} end
  local kind = string.sub(last, 1, 1)
  state = kind == 'A' and 'ACKED' or kind == 'F' and 'DROPPED' or 'EXPIRED'
end
local result = {state}
for _, entry in ipairs(entries) do
  table.insert(result, entry)
end
return result
