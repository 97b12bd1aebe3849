-- The spool ledger's bank on a Redis Cluster: it grants the ledger's shards their budgets, shares
-- of each gateway-wide limit whose sum never exceeds the limit. A shard given a budget may hold up
-- to it without asking anyone; one that lacks room asks here, and when the bank lacks it too, the
-- node has the shards give back what they do not use (quota_release) first.
-- KEYS[1] bank HASH 'granted:<shard>:<scope>' what it granted the shard in all, 'returned:<shard>:<scope>'
--                   the most the shard was heard to have given back in all, 'leased:<scope>' the
--                   sum over shards of granted less returned: what the bank cannot grant
-- ARGV entries of seven: shard, scope, limit ('' when only telling), what the shard has given back
-- in all and what it learned it was granted in all (each '' when not known: the second makes up
-- for grants this bank's primary lost in a failover), how much it lacks (0 when only telling), then
-- how much to grant at least while there is plenty (saves asking again soon).
-- Returns per entry {granted in all, granted now}.
local BANK = KEYS[1]
local function counter(field)
  return tonumber(redis.call('HGET', BANK, field) or '0')
end

local reply = {}
for i = 1, #ARGV, 7 do
  local shard, scope, limit = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local returned, learned = tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  local lacking, chunk = tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
  local grantedField = 'granted:' .. shard .. ':' .. scope
  local returnedField = 'returned:' .. shard .. ':' .. scope
  local leased = 'leased:' .. scope
  if learned then
    local granted = counter(grantedField)
    if learned > granted then
      redis.call('HSET', BANK, grantedField, learned)
      redis.call('HINCRBY', BANK, leased, learned - granted)
    end
  end
  if returned then
    local heard = counter(returnedField)
    if returned > heard then
      redis.call('HSET', BANK, returnedField, returned)
      redis.call('HINCRBY', BANK, leased, heard - returned)
    end
  end
  local now = 0
  if lacking > 0 and limit then
    local free = limit - counter(leased)
    -- a chunk, or less as the free part runs low, so that many shards can still get some
    now = math.max(0, math.min(free, math.max(lacking, math.min(chunk, math.floor(free / 32)))))
    if now > 0 then
      redis.call('HINCRBY', BANK, grantedField, now)
      redis.call('HINCRBY', BANK, leased, now)
    end
  end
  table.insert(reply, {counter(grantedField), now})
end
return reply
