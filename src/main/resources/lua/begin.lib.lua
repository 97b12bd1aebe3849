-- Starts a call (last: it resets what every library above gathers).
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.

-- Starts a call: its keys and arguments, and a fresh state for everything the library gathers.
local function begin_call(keys, args)
  KEYS, ARGV = keys, args
  K = {
    meta = keys[1], backlog = keys[2], events = keys[3], expiry = keys[4], waiters = keys[5],
    pending = keys[6], stale = keys[7], deliveries = keys[8], first = keys[9], polls = keys[10],
    scheduled = keys[11], dead = keys[12], errors = keys[13], failures = keys[14], reasons = keys[15],
    ttl = keys[16], charged = keys[17], topicBytes = keys[18], realized = keys[19], gone = keys[20],
    delayed = keys[21], holders = keys[22], keyof = keys[23], behind = keys[24], ready = keys[25],
    memory = keys[26], forgets = keys[27], copies = keys[28], freed = keys[29],
  }
  -- none for a script that reads many consumers' keys, each as its own begin_call
  CONSUMER = K.meta and string.match(K.meta, '{c:(.*)}:meta$')
  held_history_ms = 2592000000
  ttl_in_use = nil
  expiry_in_use = nil
  handout_records = {}
  gone_in_use = nil
  ordering_in_use = nil
  keys_passed = false
  dropped_dead = false
  segments = {}
  call_now = nil
  -- set by settings(): memory is never read or written for a consumer whose settings were not read
  memory_salt = nil
  spool_change = {bytes = 0, events = 0, figures = false}
  charges_in_use = nil
  counters = nil
  let_go_copies = {}
  answers_let_go = false
end
