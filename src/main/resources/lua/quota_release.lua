-- On a ledger of several shards: learns the bank's grants to this shard, and gives back whatever
-- budget it does not use, so that the bank can grant it to a shard that lacks it.
-- ARGV: scope/granted pairs (granted '' when not known).
-- Returns per scope, in order: what this shard has given back of it in all (for the bank to learn).
local returned = {}
for i = 1, #ARGV, 2 do
  local scope = ARGV[i]
  learn_grant(scope, tonumber(ARGV[i + 1]))
  -- holds count as used: they stand for events on their way to a spool
  local unused = budget(scope, 0, true) - usage(scope)
  if unused > 0 then redis.call('HINCRBY', BUDGETS, scope .. ':returned', unused) end
  table.insert(returned, budget_counter(scope .. ':returned'))
end
return returned
