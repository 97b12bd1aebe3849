-- Lets go the room a publish round held in the consumer's own quota (own_hold.lua) when no spool
-- call of the round comes to take it (its events were all refused, or the round failed).
-- ARGV[1] the hold's id
-- Returns 1, or -1 when the consumer does not exist.
if not settings() then return -1 end
release_own_holds({'q:' .. ARGV[1]})
return 1
