-- Which of a socket's deliveries still count in its push window: those that are their event's
-- latest delivery and still handed out (not acked, nacked, lapsed or handed out again, by any path).
-- Asked while the window is full, so it also files the socket's instance to be told of settlements
-- by other paths (see file_window).
-- ARGV[1] the instance's window id ("<node>/<instance>/window"), ARGV[2] for how long to tell it, ms
-- ARGV[3..] the ackIds
-- Returns per ackId 1 (still out) or 0, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local now = clock()
file_window(ARGV[1], tonumber(ARGV[2]), now, cfg.windows)
local out = {}
for i = 3, #ARGV do
  out[i - 2] = is_out(ARGV[i]) and 1 or 0
end
return out
