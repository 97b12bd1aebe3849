-- One scheduler step for one consumer: deliveries past their deadline become stale, events past
-- their retention leave, delayed events whose time came enter the backlog, memory whose time came
-- goes. Bounded by ARGV[1] per kind of work, so its cost follows the work due.
-- ARGV[1] most entries to move per kind
-- Returns the time the consumer next needs the scheduler, or -1 when it holds nothing timed.
local cfg = settings()
if not cfg then return -1 end
local now = clock()
local limit = tonumber(ARGV[1])
make_due_stale(cfg, now, limit)
expire_due(cfg, now, limit)
release_delayed(now, limit)
if not cfg.ordering and uses_ordering() then drain_lines(limit) end
-- events dropped on the way are remembered for a while (write_memory writes that memory)
write_memory()
-- last: the fields this step wrote are kept from now on, the others may go
local more = forget_due(now, limit)

wake_waiter(cfg)
if more then return now end
return next_due(cfg, next_redelivery(now))
