-- Decides, for each event of a publish round, whether every quota it would count against has room,
-- and holds that room until quota_settle replaces the hold with the consumers' own figures. Atomic,
-- so concurrent publishers never overshoot a quota together. The room is held per consumer, under
-- "<hold id>:<consumer>", as each consumer's spool script realizes its part separately.
-- ARGV[1] hold id, ARGV[2] ms after which an unsettled hold is given back, ARGV[3] the gateway's
-- quota in bytes ('' for none), ARGV[4] 'one' on a ledger of one shard (limits are judged whole),
-- else 'try' or 'final' (judged against this shard's budgets); then the bank's grants to learn
-- first (their number, then scope/granted pairs); then the number of groups, then per group (the
-- events of one publish request, for the consumers of this shard):
--   topic ('' when it has no quota), its quotaBytes, number of matching consumers, per consumer:
--   name, refusesForAll ('1' or '0'), namespace, namespace quotaBytes (each '' for none); number of
--   events, then each event's size in bytes.
-- A consumer's own quotaBytes/quotaEvents are not judged here but by its spool script, exactly,
-- against its own figures (publish.lua).
-- Returns one verdict per event, in order: '' (room for every consumer), 'R <scope> <name>'
-- (refused for all; scope gateway, namespace or topic) or 'S <consumer> ...' (room for all but
-- these consumers, which skip it). In 'try' mode, when a budget is short, it holds nothing and
-- returns {'SHORT', scope, bytes lacking, ...} instead: the node asks the bank, then tries 'final'.
local now = now_ms()
give_back_expired(now)
local mode = ARGV[4]
local trying = mode == 'try'
local at = learn_grants(5)
-- room taken, by consumer and usage field: written once per field at the end
local held = {}
local gatewayQuota = tonumber(ARGV[3])
local verdicts = {}
-- usage read once per field, then kept up to date here
local used = {}
local function current(field)
  if used[field] == nil then used[field] = usage(field) end
  return used[field]
end
-- each limited scope's budget, read once
local budgets = {}
local function room(field, limit)
  if budgets[field] == nil then budgets[field] = budget(field, limit, mode ~= 'one') or false end
  return budgets[field] or nil
end
-- trying: what each short scope lacks for the whole request
local short = {}

local function next_arg()
  local value = ARGV[at]
  at = at + 1
  return value
end

for _ = 1, tonumber(next_arg()) do
  local topic, topicQuota = next_arg(), tonumber(next_arg())
  local consumers = {}
  for i = 1, tonumber(next_arg()) do
    consumers[i] = {name = next_arg(), refuses = next_arg() == '1', ns = next_arg(), nsQuota = tonumber(next_arg())}
  end
  for _ = 1, tonumber(next_arg()) do
    local size = tonumber(next_arg())
    local adding = {}
    local function fits(field, amount, limit)
      local most = limit and room(field, limit)
      local after = current(field) + (adding[field] or 0) + amount
      if not most or after <= most then return true end
      -- trying, it goes on as if there were room, to learn the whole shortfall
      if trying then short[field] = math.max(short[field] or 0, after - most) end
      return trying
    end
    local function take(field, amount)
      adding[field] = (adding[field] or 0) + amount
    end
    local refusal, skipped, copies, taking = nil, {}, 0, {}
    for _, c in ipairs(consumers) do
      local scope
      if c.ns ~= '' and not fits('n:' .. c.ns, size, c.nsQuota) then
        scope = 'namespace ' .. c.ns
      end
      if not scope then
        take('c:' .. c.name .. ':b', size)
        take('c:' .. c.name .. ':e', 1)
        if c.ns ~= '' then take('n:' .. c.ns, size) end
        copies = copies + 1
        table.insert(taking, c)
      elseif c.refuses then
        refusal = scope
        break
      else
        table.insert(skipped, c.name)
      end
    end
    if not refusal and topic ~= '' then
      if fits('t:' .. topic, size * copies, topicQuota) then take('t:' .. topic, size * copies) else refusal = 'topic ' .. topic end
    end
    if not refusal then
      if fits('g', size * copies, gatewayQuota) then take('g', size * copies) else refusal = 'gateway -' end
    end
    if refusal then
      table.insert(verdicts, 'R ' .. refusal)
    else
      for field, amount in pairs(adding) do
        used[field] = current(field) + amount
      end
      -- each copy's share of every scope, held for the consumer that will hold the copy
      for _, c in ipairs(taking) do
        local mine = held[c.name] or {}
        held[c.name] = mine
        local function hold_for(field, amount) mine[field] = (mine[field] or 0) + amount end
        hold_for('c:' .. c.name .. ':b', size)
        hold_for('c:' .. c.name .. ':e', 1)
        hold_for('g', size)
        if c.ns ~= '' then hold_for('n:' .. c.ns, size) end
        if topic ~= '' then hold_for('t:' .. topic, size) end
      end
      table.insert(verdicts, #skipped > 0 and ('S ' .. table.concat(skipped, ' ')) or '')
    end
  end
end
if next(short) then
  local reply = {'SHORT'}
  for field, amount in pairs(short) do
    table.insert(reply, field)
    table.insert(reply, amount)
  end
  return reply
end
for consumer, fields in pairs(held) do
  local hold = {}
  for field, amount in pairs(fields) do
    add(field, amount)
    table.insert(hold, {field, amount})
  end
  local key = ARGV[1] .. ':' .. consumer
  redis.call('HSET', HOLDS, key, cjson.encode(hold))
  redis.call('ZADD', HOLD_ENDS, now + tonumber(ARGV[2]), key)
end
return verdicts
