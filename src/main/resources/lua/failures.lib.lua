-- Events that fail or run out of time: the dead-letter and error queues, drops, expiry.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- Moves an event into the dead-letter queue (why: MAX_DELIVERIES, TTL_EXPIRED or RETENTION), or to
-- the error queue (why: nil, a REJECT), with its delivery count n and last nack reason; with the
-- queue switched off the event is dropped instead, counted, and remembered so that a late ack says
-- so. It stays there until redriven or acked, for retentionMs at most, and never past twice its retention
-- after its publish. Returns the nack status.
local function fail(cfg, id, seq, n, why, now)
  release_key(id)
  local reason = redis.call('HGET', K.reasons, id)
  withdraw(id)
  local keep = (why and cfg.deadLetter) or (not why and cfg.errorQueue)
  note(id, 'F ' .. now .. ' ' .. (why or 'REJECTED') .. (keep and '' or ' DROPPED'))
  if not keep then
    spool_less(id, forget(id))
    if seq then remember(DROPPED, {tonumber(seq)}) end
    count({dropped = 1})
    return 'DROPPED'
  end
  local value = redis.call('HGET', K.events, id)
  spool_less(id, value and event_bytes(value) or 0)
  redis.call('ZADD', why and K.dead or K.errors, now, id)
  redis.call('HSET', K.failures, id, cjson.encode({deadLetterReason = why, deliveryCount = tonumber(n),
    -- no nack reason (HGET's false) leaves the field out, as cjson would write false
    reason = reason or nil, seq = seq and tonumber(seq)}))
  -- never beyond twice its retention after its publish: its stored copy is kept that long (and an
  -- hour), however often it comes back and fails again (docs/internals.md, "Retention")
  redis.call('ZADD', K.expiry, math.min(now, retention_ends(cfg, id)) + cfg.retentionMs, id)
  redis.call('ZREM', K.ttl, id)
  if why then
    count({deadLettered = 1, ['deadLettered:' .. why] = 1})
    return 'DEAD_LETTERED'
  end
  count({rejected = 1})
  return 'REJECTED'
end

-- An event whose time ran out (why: TTL_EXPIRED or RETENTION) goes to the dead-letter queue, or is
-- dropped with deadLetter off; one already in the dead-letter or error queue leaves for good
-- (counted as expired). seq and n: its arrival sequence and delivery count, when the caller has
-- them (it took the event from the backlog, or read its delivery); without them an event that is
-- not handed out is in the backlog, and leaves it from the middle.
local function expire(cfg, id, why, now, seq, n)
  if redis.call('HEXISTS', K.events, id) == 0 then
    -- an index entry that outlived its event (left by an older version): only the entry goes
    forget(id)
    return
  end
  if redis.call('HEXISTS', K.failures, id) == 1 then
    note(id, 'L ' .. now)
    forget(id)
    count({expired = 1})
    return
  end
  if not seq then
    n, seq = delivery_state(id)
    if not n and not (redis.call('ZSCORE', K.pending, id) or redis.call('ZSCORE', K.stale, id)
        or redis.call('ZSCORE', K.scheduled, id)) then
      -- in the backlog: it leaves from the middle. Its arrival sequence is in its pair only; the
      -- dead-letter queue's ackIds and the dropped mark need one, so it gets a new one (taking
      -- its pair back later, it goes out with the pair's). A delayed event has no pair yet, nor
      -- one waiting for its turn.
      leave_queue(id)
      seq = string.format('%d', redis.call('HINCRBY', K.meta, 'seq', 1))
    end
  end
  fail(cfg, id, seq, tonumber(n or '0'), why, now)
end
