-- Brings this ledger shard up to date with its consumers' own figures, first giving back holds (of
-- publish rounds or polls: their events are now in those figures, or never got there).
-- ARGV[1] hold ids, separated by spaces ('' for none), ARGV[2] the gateway's maxUnackedTotal ('' for
-- none), ARGV[3] 'one' on a ledger of one shard, else 'shards'; then per consumer: name, '1' if it
-- exists else '0', its namespace ('' for none), version, salt, bytes, events, unacked, number of
-- realized holds, those holds, number of topics, then topic/bytes pairs (all but the name and '0'
-- omitted for one that does not exist). Consumers that count no unacked against maxUnackedTotal
-- (those of $sys/ topics only) send 0 as their unacked.
-- A figure older than the one the ledger has (lower version, same salt) is ignored.
-- Returns 1 when polls held back by maxUnackedTotal may go on, else 0.
local now = now_ms()
give_back_expired(now)
for hold in string.gmatch(ARGV[1], '%S+') do give_back(hold) end

-- Moves one consumer's share of the usage from its old figures to its new ones.
local function shift(name, old, new)
  add('c:' .. name .. ':b', (new.b or 0) - (old.b or 0))
  add('c:' .. name .. ':e', (new.e or 0) - (old.e or 0))
  add('g', (new.b or 0) - (old.b or 0))
  add('u', (new.u or 0) - (old.u or 0))
  if old.ns and old.ns ~= '' then add('n:' .. old.ns, -(old.b or 0)) end
  if new.ns and new.ns ~= '' then add('n:' .. new.ns, new.b or 0) end
  local topics = {}
  for topic in pairs(old.t or {}) do topics[topic] = true end
  for topic in pairs(new.t or {}) do topics[topic] = true end
  for topic in pairs(topics) do add('t:' .. topic, ((new.t or {})[topic] or 0) - ((old.t or {})[topic] or 0)) end
end

local at = 4
while at <= #ARGV do
  local name, exists = ARGV[at], ARGV[at + 1] == '1'
  local stored = redis.call('HGET', SYNCED, name)
  local old = stored and cjson.decode(stored) or {}
  if exists then
    local new = {ns = ARGV[at + 2], v = tonumber(ARGV[at + 3]), salt = ARGV[at + 4], b = tonumber(ARGV[at + 5]),
      e = tonumber(ARGV[at + 6]), u = tonumber(ARGV[at + 7]), t = {}}
    local realized = tonumber(ARGV[at + 8])
    -- what these figures include is held no longer
    for i = 1, realized do give_back(ARGV[at + 8 + i]) end
    at = at + 9 + realized
    local topics = tonumber(ARGV[at])
    for i = 1, topics do new.t[ARGV[at - 1 + 2 * i]] = tonumber(ARGV[at + 2 * i]) end
    at = at + 1 + 2 * topics
    -- a figure read before a newer one was applied, or of a consumer since deleted, changes nothing
    local stale = (old.salt == new.salt and old.v and old.v >= new.v) or old.gone == new.salt
    if not stale then
      if old.gone then old = {} end
      shift(name, old, new)
      -- cjson cannot tell an empty object from an empty array: no topics are stored as none
      if next(new.t) == nil then new.t = nil end
      redis.call('HSET', SYNCED, name, cjson.encode(new))
    end
  else
    at = at + 2
    if not old.gone then
      shift(name, old, {})
      if old.salt then redis.call('HSET', SYNCED, name, cjson.encode({gone = old.salt})) else redis.call('HDEL', SYNCED, name) end
    end
  end
end

-- polls were held back by the limit (quota_take_unacked marked it) and there is room again
local unackedBudget = budget('u', tonumber(ARGV[2]), ARGV[3] ~= 'one')
if unackedBudget and usage('u') < unackedBudget and redis.call('HDEL', USAGE, 'held:unacked') == 1 then return 1 end
return 0
