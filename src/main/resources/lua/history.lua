-- One event's state and history entries (see note() in consumer.lib.lua).
-- KEYS[EXTRA_KEY] the event's history as versions before 0.9.0 kept it (a list of its own), if any
-- ARGV[1] the eventId
-- Returns {state, entries...}, {} when nothing is known of the event (never spooled for this
-- consumer, gone longer than the history is kept, or acked on its first delivery: that leaves only
-- its ack bit, which an eventId does not find), or -1 when the consumer does not exist.
-- States: BACKLOG, DELIVERED, SCHEDULED (waiting out a nack's delay or the publisher's),
-- DEAD_LETTERED, ERROR while held; ACKED, DROPPED, EXPIRED after it left. An event waiting behind
-- its key's holder has a last entry "K <now> <the holder's eventId>" (not stored: it is its state).
local cfg = settings()
if not cfg then return -1 end
local id = ARGV[1]
local state
if in_backlog(id) then
  state = 'BACKLOG'
elseif redis.call('ZSCORE', K.pending, id) or redis.call('ZSCORE', K.stale, id) then
  state = 'DELIVERED'
elseif redis.call('ZSCORE', K.scheduled, id) or redis.call('ZSCORE', K.delayed, id) then
  state = 'SCHEDULED'
elseif redis.call('ZSCORE', K.dead, id) then
  state = 'DEAD_LETTERED'
elseif redis.call('ZSCORE', K.errors, id) then
  state = 'ERROR'
end
local entries = redis.call('LRANGE', KEYS[EXTRA_KEY], 0, -1)
for _, entry in ipairs(history_entries(id)) do
  table.insert(entries, entry)
end
-- the current hand-out, when its list does not hold it, is told by its call's hand-out record
local handout = handout_entry(redis.call('HGET', K.deliveries, id))
if handout then table.insert(entries, handout) end
if not state then
  local last = entries[#entries]
  if not last then return {} end
  local kind = string.sub(last, 1, 1)
  -- an event redriven, then acked on its next delivery (or handed out in auto ack mode), left its
  -- list without that delivery: anything else after a redrive notes an entry
  if kind == 'A' or kind == 'R' then
    state = 'ACKED'
  else
    state = kind == 'F' and 'DROPPED' or 'EXPIRED'
  end
end
local result = {state}
for _, entry in ipairs(entries) do
  table.insert(result, entry)
end
local holder = holder_ahead(id)
if holder then table.insert(result, 'K ' .. clock() .. ' ' .. holder) end
return result
