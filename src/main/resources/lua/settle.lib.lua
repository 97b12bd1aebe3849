-- Settling named deliveries and whole batches in one call.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- The answer of a settle over named deliveries and batches: {the statuses of the `direct` first,
-- then per batch key from KEYS[EXTRA_KEY] on its rows ({} for an unknown one), or 0 for a batch
-- left for another call}. batches: per key the range of settled items it stood for, or false;
-- row(rows, i) appends the row of the i-th.
local function settle_answer(statuses, direct, batches, row)
  local own = {}
  for i = 1, direct do
    own[i] = statuses[i]
  end
  local result = {own}
  for k = EXTRA_KEY, #KEYS do
    local range = batches[k]
    if not range then
      table.insert(result, 0)
    else
      local rows = {}
      for i = range[1], range[2] do
        row(rows, i)
      end
      table.insert(result, rows)
    end
  end
  return result
end

-- Applies settle (a list of ackIds -> their statuses in order) to ARGV[from..to] and to the ackIds
-- of each batch key from KEYS[EXTRA_KEY] on, taking a batch only while fewer than `budget` ackIds
-- were taken: a call settles at most budget + one batch, all in one settle. Returns {statuses in
-- order, then per batch key {ackId, status, ...} ({} for an unknown one), or 0 for a batch left
-- for another call}.
local function ack_each(settle, from, to, budget)
  local ackIds = {}
  for i = from, to do
    table.insert(ackIds, ARGV[i])
  end
  local direct = #ackIds
  local batches = {}
  for k = EXTRA_KEY, #KEYS do
    if #ackIds >= budget then
      batches[k] = false
    else
      local first = #ackIds + 1
      for ackId in string.gmatch(redis.call('GET', KEYS[k]) or '', '%S+') do
        table.insert(ackIds, ackId)
      end
      batches[k] = {first, #ackIds}
    end
  end
  local statuses = settle(ackIds)
  return settle_answer(statuses, direct, batches, function(rows, i)
    table.insert(rows, ackIds[i])
    table.insert(rows, statuses[i])
  end)
end

-- A settle for ack_each from a function settling one ackId.
local function one_by_one(settle_one)
  return function(ackIds)
    local statuses = {}
    for i, ackId in ipairs(ackIds) do
      statuses[i] = settle_one(ackId)
    end
    return statuses
  end
end
