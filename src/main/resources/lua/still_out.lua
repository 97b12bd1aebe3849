-- Which of a socket's deliveries still count in its push window: those that are their event's
-- latest delivery and still handed out (not acked, nacked, lapsed or handed out again, by any path).
-- ARGV the ackIds
-- Returns per ackId 1 (still out) or 0, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local out = {}
for i, ackId in ipairs(ARGV) do
  out[i] = is_out(ackId) and 1 or 0
end
return out
