-- Reads the head of the dead-letter or error queue (oldest first). Reading does not take events
-- out: an ack (failed_ack.lua) discards them, a redrive (redrive.lua) sends them back.
-- KEYS[EXTRA_KEY] the batch key (its batchAckId), written when events are returned
-- ARGV[1] 'dead' or 'errors', ARGV[2] most events
-- Returns {ackId1, blob1, failure1 (JSON), ...}, or -1 when the consumer does not exist.
local cfg = settings()
if not cfg then return -1 end
local queue = ARGV[1] == 'dead' and K.dead or K.errors
local out, ackIds = {}, {}
local head = redis.call('ZRANGE', queue, 0, tonumber(ARGV[2]) - 1, 'WITHSCORES')
for i = 1, #head, 2 do
  local id, since = head[i], string.format('%d', head[i + 1])
  local blob = redis.call('HGET', K.events, id)
  local failure = redis.call('HGET', K.failures, id)
  if blob and failure then
    local seq = tostring(cjson.decode(failure).seq)
    local ackId = ack_id(cfg, id, seq, ARGV[1], since)
    table.insert(ackIds, ackId)
    table.insert(out, ackId)
    table.insert(out, blob)
    table.insert(out, failure)
  end
end
if #ackIds > 0 then
  redis.call('SET', KEYS[EXTRA_KEY], table.concat(ackIds, ' '), 'PX', 3600000)
end
return out
