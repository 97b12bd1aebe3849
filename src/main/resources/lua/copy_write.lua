-- Writes the stored copy of a publish round's events (docs/internals.md), before any consumer's
-- spool call may take them: its events (field d, an EventCopy frame), a holder mark for each
-- consumer the round spools them to, and how many marks there are.
-- KEYS[1] herald:{p:<copyId>}
-- ARGV[1] the frame, ARGV[2] how long it may stay in ms (the longest retention among its holders,
-- and an hour), ARGV[3..] the consumers the round spools it to.
-- A copy is written once: a second call (there is none by design) changes nothing. Returns 1 when
-- it wrote the copy, 0 when it was there already.
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
-- one HSET for all fields (a round has few consumers; many go in pieces, as Lua's stack allows)
local fields = {'d', ARGV[1], 'n', #ARGV - 2}
for i = 3, #ARGV do
  fields[#fields + 1] = 'h:' .. ARGV[i]
  fields[#fields + 1] = '1'
  if #fields >= 4000 then
    redis.call('HSET', KEYS[1], unpack(fields))
    fields = {}
  end
end
if #fields > 0 then redis.call('HSET', KEYS[1], unpack(fields)) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
