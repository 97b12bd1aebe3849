-- The consumer's spool figures for the gateway-wide ledger: {bytes, events, version, salt, unacked, realized holds, topic1,
-- bytes1, ...} (see spool_figures in the library), or -1 when the consumer does not exist.
if redis.call('EXISTS', K.meta) == 0 then return -1 end
return spool_figures()
