-- One scheduler step for one consumer: deliveries past their deadline become stale, events past
-- their retention leave, delayed events whose time came enter the backlog, memory whose time came
-- goes. Bounded by ARGV[1] per kind of work, so its cost follows the work due.
-- ARGV[1] most entries to move per kind
-- Returns {the time the consumer next needs the scheduler, or -1 when it holds nothing timed, then
-- the copies for the node to release (let go of by this step, or filed by earlier calls)}.
local cfg = settings()
if not cfg then return {-1} end
answers_let_go = true
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
local release = let_go_copies
for _, copy in ipairs(take_freed(limit)) do table.insert(release, copy) end
local due = (more or redis.call('LLEN', K.freed) > 0) and now or next_due(cfg, next_redelivery(now))
return {due, unpack(release)}
