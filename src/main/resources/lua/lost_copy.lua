-- Drops events whose stored copy is gone (docs/internals.md, "Reading copies"): a failover without
-- redis.waitReplicas lost it, or it expired. They cannot be delivered; each leaves the consumer as
-- dropped, with COPY_LOST in its history, from wherever it is (out, waiting, or in the dead-letter or
-- error queue).
-- ARGV the eventIds.
-- Returns the copies it let go of, for the node to release.
local cfg = settings()
if not cfg then return {} end
answers_let_go = true
local now = clock()
local dropped = 0
for _, id in ipairs(ARGV) do
  local value = redis.call('HGET', K.events, id)
  if value and is_stub(value) then
    local entry = redis.call('HGET', K.deliveries, id)
    local seq = entry and string.match(entry, '^%d+:(%d+)')
    note(id, 'F ' .. now .. ' COPY_LOST DROPPED')
    -- one in the dead-letter or error queue left the spool's figures when it failed
    local failed = redis.call('HEXISTS', K.failures, id) == 1
    local bytes = forget(id)
    if not failed then spool_less(id, bytes) end
    if seq then remember(DROPPED, {tonumber(seq)}) end
    dropped = dropped + 1
  end
end
count({dropped = dropped})
write_memory()
return let_go_copies
