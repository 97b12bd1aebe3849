-- The batch record: what a batch key (herald:{c:N}:batch:<batchAckId>) holds of one poll's
-- deliveries, so that the batch's ack settles each of them and a resent one answers ALREADY_ACKED
-- for each, with its ackId. Written by poll.lua, read by ack.lua.
-- Part of the per-consumer library: see consumer.lib.lua and Script.LIBRARY_PARTS.
--
-- Two forms. The long one, "<mark> <eventId> <seq> <n> <size> ..." (before the compact layout),
-- costs ~45 B per event for ackTimeout + 1 h. The short one (the compact layout: docs/internals.md,
-- "Batch records") is "~<mark>", then a token per event that says only what does not follow from
-- the event before it: "<id>/<seq>/<n>/<size>", each part empty when it is the expected one (id:
-- the next eventId of the copy before's, else the last 3 hex digits when it is in that copy, else
-- the whole eventId; seq: one more; n, size: the same), and "*<k>" for k events that follow in
-- every part. A poll's new events are runs of their rounds' copies: a few bytes per copy.

-- (two locals: a script run by EVALSHA is one chunk with the library, at most 200 locals)
local short_batch_record, read_batch_record
do
  -- eventIds are <12 hex ms>-<16 hex>; the ids of one copy share the copy's name (named_copy) and
  -- count up in the last 3 hex digits (see EventIds.java)
  local EVENT_ID_LENGTH, SUFFIX_LENGTH = 29, 3

  -- The eventId after `id` in its copy, or nil when there is none (the last of a block, or an id of
  -- another form).
  local function next_in_copy(id)
    if #id ~= EVENT_ID_LENGTH then return nil end
    local index = tonumber(string.sub(id, -SUFFIX_LENGTH), 16)
    if not index or index >= 4095 then return nil end
    return named_copy(id) .. string.format('%03x', index + 1)
  end

  -- The short record of a batch; items: eventId, seq, n, size (strings, as the deliveries entry
  -- holds them), four per delivery. Nil when an eventId is not of lowercase hex digits and dashes,
  -- or a seq not of the form string.format('%d') writes (no version makes either): the long form
  -- then holds the batch. Per event it compares numbers and interned strings only: poll.lua
  -- writes one for every batch, so what a run costs is what a hand-out costs more.
  function short_batch_record(mark, items)
    local tokens, run = {'~' .. mark}, 0
    -- the event before: its copy (when its id is of the current form), index in it, seq, n, size
    local copy, index, seq, n, size
    for i = 1, #items, 4 do
      local nextId, nextSeq, nextN, nextSize = items[i], items[i + 1], items[i + 2], items[i + 3]
      local nextCopy = #nextId == EVENT_ID_LENGTH and named_copy(nextId) or nil
      local suffix = nextCopy and string.sub(nextId, -SUFFIX_LENGTH)
      local sameCopy = nextCopy ~= nil and nextCopy == copy
      -- of an id in the copy before, its name was checked with that event's: only its suffix is now
      if #nextId <= SUFFIX_LENGTH or string.find(sameCopy and suffix or nextId, '[^0-9a-f%-]')
          or not string.find(nextSeq, '^[1-9]%d*$') or #nextSeq > 15 then
        return nil
      end
      local nextIndex = suffix and tonumber(suffix, 16)
      local idPart = nextId
      if sameCopy then
        -- next_in_copy: the one after, unless the one before was the last of its block
        local follows = nextIndex and index and index >= 0 and index < 4095 and nextIndex == index + 1
        idPart = follows and '' or suffix
      end
      local nextSeqNumber = tonumber(nextSeq)
      local seqPart = nextSeqNumber == (seq and seq + 1) and '' or nextSeq
      local nPart = nextN == n and '' or nextN
      local sizePart = nextSize == size and '' or nextSize
      copy, index, seq, n, size = nextCopy, nextIndex, nextSeqNumber, nextN, nextSize
      if idPart == '' and seqPart == '' and nPart == '' and sizePart == '' then
        run = run + 1
      else
        if run > 0 then table.insert(tokens, '*' .. run) end
        run = 0
        table.insert(tokens, idPart .. '/' .. seqPart .. '/' .. nPart .. '/' .. sizePart)
      end
    end
    if run > 0 then table.insert(tokens, '*' .. run) end
    return table.concat(tokens, ' ')
  end

  -- The deliveries a batch record in either form names: mark, then eventIds, seqs, delivery counts
  -- and sizes (strings), in the order handed out. A record in neither form (an older version's list
  -- of ackIds) answers nil.
  function read_batch_record(held)
    local ids, seqs, ns, sizes = {}, {}, {}, {}
    local mark = string.match(held, '^~(%x+)')
    if not mark then
      mark = string.match(held, '^(%x+) ')
      if not mark or string.find(held, '.', 1, true) then return nil end
      for id, seq, n, size in string.gmatch(held, ' (%S+) (%S+) (%S+) (%S+)') do
        local i = #ids + 1
        ids[i], seqs[i], ns[i], sizes[i] = id, seq, n, size
      end
      return mark, ids, seqs, ns, sizes
    end
    local id, seq, n, size = '', nil, nil, nil
    local function add()
      local i = #ids + 1
      ids[i], seqs[i], ns[i], sizes[i] = id, seq, n, size
    end
    for token in string.gmatch(held, ' (%S+)') do
      local k = string.match(token, '^%*(%d+)$')
      if k then
        for _ = 1, tonumber(k) do
          id, seq = next_in_copy(id), string.format('%d', tonumber(seq) + 1)
          add()
        end
      else
        local idPart, seqPart, nPart, sizePart = string.match(token, '^([^/]*)/([^/]*)/([^/]*)/([^/]*)$')
        if idPart == '' then
          id = next_in_copy(id)
        elseif #idPart == SUFFIX_LENGTH then
          id = named_copy(id) .. idPart
        else
          id = idPart
        end
        seq = seqPart ~= '' and seqPart or string.format('%d', tonumber(seq) + 1)
        if nPart ~= '' then n = nPart end
        if sizePart ~= '' then size = sizePart end
        add()
      end
    end
    return mark, ids, seqs, ns, sizes
  end
end
