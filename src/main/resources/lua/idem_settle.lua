-- Records how claimed publishes ended, for keys still claimed by that event (KEEPTTL: the window
-- runs from the first claim).
-- KEYS one idempotency key per event; ARGV per key: its eventId, then the number of consumers that
-- stored it, or '-' when it was refused (the claim is dropped: a retry is a new publish).
for i, key in ipairs(KEYS) do
  local id, matched = ARGV[2 * i - 1], ARGV[2 * i]
  if redis.call('GET', key) == 'P ' .. id then
    if matched == '-' then
      redis.call('DEL', key)
    else
      redis.call('SET', key, 'D ' .. id .. ' ' .. matched, 'XX', 'KEEPTTL')
    end
  end
end
return 1
