-- Shared by the ledger's scripts (quota_reserve, quota_take_unacked, quota_settle, quota_release,
-- quota_alert): the gateway-wide account of spooled bytes and unacked events, kept in one hash slot
-- per shard. A consumer's entries live in its shard; on a Redis Cluster there are several shards,
-- each judging against its share of every gateway-wide limit (its budget, see KEYS[5]). Every
-- per-consumer figure is exact in the consumer's own keys (spool_figures in consumer.lib.lua); the ledger holds the latest
-- of those figures it was given, plus holds: room reserved by publishes on their way to the
-- consumers' spools, and by polls on their way to hand events out.
-- KEYS[1] usage    HASH  what is spooled, holds included: 'g' the gateway; 'c:<consumer>:b' and
--                        'c:<consumer>:e' bytes and events of a consumer; 'n:<namespace>' bytes of
--                        the consumers of a namespace; 't:<topic>' bytes charged to a topic;
--                        'u' delivered-but-unacked events gateway-wide; 'alert:spool' and
--                        'alert:unacked' 1 while that alert is raised; 'held:unacked' 1 while
--                        polls are held back by maxUnackedTotal
-- KEYS[2] synced   HASH  consumer -> JSON of its latest figures {v, salt, b, e, u, ns, t = {topic = bytes}},
--                        or {gone = salt} once it was deleted
-- KEYS[3] holds    HASH  "<hold id>:<consumer>" -> JSON list of {usage field, amount} to give back
-- KEYS[4] holdEnds ZSET  the same -> when it is given back unsettled (its node died meanwhile)
-- KEYS[5] budgets  HASH  on a ledger of several shards, this shard's share of each limited scope
--                        ('g', 'n:<namespace>', 't:<topic>', 'u', as in usage): '<scope>:granted',
--                        the most the bank (quota_bank.lua) was heard to have granted this shard in
--                        all, and '<scope>:returned', what this shard has given back in all. Both
--                        only grow and travel as totals, so a late or repeated word changes
--                        nothing and a lost one is made up by a later one (each minute at least).
-- A hold is given back when the node that took it settles it, or when figures of its consumer that
-- include its effect arrive (the consumer's script realized it: see spool_figures), whichever
-- comes first; so figures never count what a hold still counts.
local USAGE, SYNCED, HOLDS, HOLD_ENDS, BUDGETS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

-- Adds to a usage field, removing it when it reaches zero.
local function add(field, amount)
  if amount ~= 0 and redis.call('HINCRBY', USAGE, field, amount) == 0 then redis.call('HDEL', USAGE, field) end
end

local function usage(field)
  return tonumber(redis.call('HGET', USAGE, field) or '0')
end

local function give_back(hold)
  local entries = redis.call('HGET', HOLDS, hold)
  if entries then
    for _, entry in ipairs(cjson.decode(entries)) do add(entry[1], -entry[2]) end
    redis.call('HDEL', HOLDS, hold)
  end
  redis.call('ZREM', HOLD_ENDS, hold)
end

-- Holds whose publish never settled them (the node died) are given back after their time.
local function give_back_expired(now)
  for _, hold in ipairs(redis.call('ZRANGEBYSCORE', HOLD_ENDS, '-inf', now, 'LIMIT', 0, 100)) do
    give_back(hold)
  end
end

local function budget_counter(field)
  return tonumber(redis.call('HGET', BUDGETS, field) or '0')
end

-- Hears that the bank has granted this shard `granted` of `scope` in all.
local function learn_grant(scope, granted)
  if granted and granted > budget_counter(scope .. ':granted') then
    redis.call('HSET', BUDGETS, scope .. ':granted', granted)
  end
end

-- What the bank lets this shard hold of a scope: granted less given back.
local function shard_budget(scope)
  return budget_counter(scope .. ':granted') - budget_counter(scope .. ':returned')
end

-- What a scope's limit lets this shard hold (nil when the scope has no limit): all of it when the
-- ledger has one shard, else its budget, never more than the limit (which may have been lowered
-- since the budget was granted).
local function budget(scope, limit, sharded)
  if not limit then return nil end
  if not sharded then return limit end
  return math.min(limit, shard_budget(scope))
end

-- Learns the grants "scope granted ..." in ARGV from `at` on (a count, then pairs); returns the
-- index after them.
local function learn_grants(at)
  for i = 1, tonumber(ARGV[at]) do learn_grant(ARGV[at + 2 * i - 1], tonumber(ARGV[at + 2 * i])) end
  return at + 1 + 2 * tonumber(ARGV[at])
end
