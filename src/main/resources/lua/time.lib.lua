-- Prepended to every script when it is loaded: Redis' clock, the one every time of the protocol is
-- read from, so that no node's clock matters.

-- Redis' time in ms since the epoch.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
