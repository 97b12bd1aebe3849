-- Raises or clears the gateway-wide alerts from their sums over the ledger's shards (kept in the
-- first shard's usage hash, so that one node announces each change).
-- ARGV[1] and ARGV[2] the percentages of a limit at which an alert is raised and cleared; then
-- triples: alert name, use, limit ('' for none). Returns per alert 'RAISED', 'CLEARED' or ''.
local reply = {}
for i = 3, #ARGV, 3 do
  local field, used, limit = 'alert:' .. ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local raised = redis.call('HGET', USAGE, field) == '1'
  local state = ''
  if limit and not raised and used * 100 >= limit * tonumber(ARGV[1]) then
    redis.call('HSET', USAGE, field, '1')
    state = 'RAISED'
  elseif raised and (not limit or used * 100 < limit * tonumber(ARGV[2])) then
    redis.call('HDEL', USAGE, field)
    state = 'CLEARED'
  end
  table.insert(reply, state)
end
return reply
