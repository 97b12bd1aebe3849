-- On a ledger of several shards: brings this shard up to what the bank heard of it, then gives back
-- whatever budget it does not use, so that the bank can grant it to a shard that lacks it.
-- ARGV triples: scope, what the bank granted this shard in all, what the bank heard it gave back in
-- all (each '' when not known). The second makes up for a return this shard's primary lost in a
-- failover after the bank heard of it (else the shard would hold budget the bank lent again).
-- Returns per scope, in order: {given back in all, granted in all as learned, given back now}.
local reply = {}
for i = 1, #ARGV, 3 do
  local scope = ARGV[i]
  learn_grant(scope, tonumber(ARGV[i + 1]))
  local heard = tonumber(ARGV[i + 2])
  if heard and heard > budget_counter(scope .. ':returned') then
    redis.call('HSET', BUDGETS, scope .. ':returned', heard)
  end
  -- holds count as used: they stand for events on their way to a spool
  local unused = math.max(0, shard_budget(scope) - usage(scope))
  if unused > 0 then redis.call('HINCRBY', BUDGETS, scope .. ':returned', unused) end
  table.insert(reply, {budget_counter(scope .. ':returned'), budget_counter(scope .. ':granted'), unused})
end
return reply
