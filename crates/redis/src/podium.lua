-- podium's board operations on Redis (docs/redis-backend.md): a Redis 7
-- function library. podium loads it once per node (FUNCTION LOAD, on every
-- primary of a cluster), naming the library and its two functions after a
-- hash of this text (the first lines it prepends define FN_RW and FN_RO),
-- and calls it by FCALL: every compound operation runs in it, so it is
-- atomic on a single Redis and on a cluster node alike. A library's top
-- level runs once, when it is loaded; a call only sets the per-call state
-- below and runs its operation (an EVAL script would build every closure
-- of this file again on every call, which cost more than a page read's
-- own commands).
--
-- KEYS[1] is the board's config hash `{tag}:c`. The board's other keys
-- share the tag, hence the slot, and are named from it (Redis allows a
-- script undeclared keys of its own slot): 2 the scores zset, 3 names
-- hash, 4 data hash, 5 distinct scores zset and 6 their multiplicities
-- (kept on dense boards only), 7-9 the staging copies of 2-4 while a reset
-- archives the board, 10 the members' searchable words and 11 its staging
-- copy, 12 what a reset in progress needs to finish (its label, the
-- archive's config and name), 13 a board with sort keys' codes by member
-- and 14 its staging copy, 15 the board's live events stream `{tag}:ev`
-- and 16 its listened marker `{tag}:el` (see "live events" below).
-- ARGV[1] names the operation; the rest are its arguments.
--
-- Scores cross the boundary only as strings: Lua would print a number with
-- 14 digits, so a computed score is never written back from Lua; ZADD gets
-- the caller's string and ZINCRBY does its own (IEEE) addition.
-- Errors are `PODIUM <kind> <args>` replies that the Rust side turns into
-- the engine's own errors (same codes, same messages).

-- Set by each call (see `run` at the end): the call's arguments (ARGV, as
-- a script would see them) and the board's keys.
local ARGV
local C, Z, N, D, U, K
local SZ, SN, SD
local I, SI, SC
-- Boards with sort keys: member -> its key codes (see "sort keys" below),
-- its staging copy, and the new order's set and codes while a re-sort
-- builds them.
local T, ST, RZ, RT
-- Where podium's native ZADD of an import batch writes (ops.zadd_open).
local ZW
-- The search index's prefix sets are `{tag}:w:<prefix>`: one per prefix of
-- the board's words, so they cannot be listed in KEYS; they share the tag,
-- hence the slot.
local WBASE
-- Exact-word sets, `{tag}:x:<word>`, so an exact query word is not looked
-- up in its prefix set (a superset) and need not be checked.
local XBASE
-- The engine indexes at most 1,024 words a member; query words are at
-- most 64 bytes, so longer prefixes could never be asked for.
local MAX_WORDS, MAX_PREFIX = 1024, 64
local MAX_MEMBER, MAX_NAME = 512, 512
-- The board's config, read by the operation that needs it (load_cfg).
local cfg

-- ---------------------------------------------------------- live events
-- A board's live events (docs/redis-backend.md, "Live events") go
-- through its stream E: every write that changes the board appends one
-- entry (`k` its kind, then what it names), trimmed to about 4,096
-- entries. Podium nodes with subscribers on the board keep the marker L
-- alive (SET EX); while it is absent nothing is appended, so a board
-- nobody watches pays one EXISTS a write. A call collects what it changed
-- (touch, whole, lifecycle) and `run` appends it once the operation is
-- done: lifecycle entries first, then one entry of the members written.
local E, L
local LISTENED, TOUCHED, WHOLE, LIFE
-- More members than this in one write are told as `whole` (re-read the
-- board) rather than listed: an import of a million would otherwise make
-- an entry of a million fields.
local MAX_TOUCHED = 1000
local STREAM_LEN = 4096

local function touch(m)
  if LISTENED then TOUCHED[#TOUCHED + 1] = m end
end

local function whole()
  if LISTENED then WHOLE = true end
end

-- `kind`, and one field `f` with value `v` (or none).
local function lifecycle(kind, f, v)
  if LISTENED then LIFE[#LIFE + 1] = {kind, f, v} end
end

local function emit()
  for _, l in ipairs(LIFE) do
    local args = {'XADD', E, 'MAXLEN', '~', STREAM_LEN, '*', 'k', l[1]}
    if l[2] then
      args[#args + 1] = l[2]
      args[#args + 1] = l[3]
    end
    redis.call(unpack(args))
  end
  if WHOLE or #TOUCHED > MAX_TOUCHED then
    redis.call('XADD', E, 'MAXLEN', '~', STREAM_LEN, '*', 'k', 'whole')
  elseif #TOUCHED > 0 then
    local args = {'XADD', E, 'MAXLEN', '~', STREAM_LEN, '*', 'k', 'w'}
    for _, m in ipairs(TOUCHED) do
      args[#args + 1] = 'm'
      args[#args + 1] = m
    end
    redis.call(unpack(args))
  end
end

local function fail(...)
  return redis.error_reply('PODIUM ' .. table.concat({...}, ' '))
end

-- ------------------------------------------------------------ sort keys
-- A board with sort keys (docs/redis-backend.md, "Sort keys") keeps each
-- member in Z as its key codes (8 bytes a key, big-endian) followed by
-- its id, scored with its first key (kscore), so that Z's order is its
-- members' byte order: the tuple's rank order, then the member tiebreak;
-- T maps each id to its codes. podium encodes a key's value so that the
-- board's read direction is rank order (ascending codes are better on an
-- asc board, descending on a desc one): a key whose direction is not the
-- board's is stored complemented ('flip'). Comparisons here are by bytes
-- (bcmp): Lua's string order follows the locale Redis runs with.

local function unhex(h)
  return (string.gsub(h, '..', function(x) return string.char(tonumber(x, 16)) end))
end

-- `sl`: two chars a key, its type ('i' int, 'f' float) and whether it is
-- stored complemented ('1'); `sk`: the keys as JSON, for podium.
local function sorted_cfg(c, sl, sk)
  c.pl = 0
  c.rk = c.ranking
  if sl and sl ~= '' then
    c.keys = {}
    for i = 1, #sl, 2 do
      c.keys[#c.keys + 1] = {int = string.sub(sl, i, i) == 'i', flip = string.sub(sl, i + 1, i + 1) == '1'}
    end
    c.pl = 8 * #c.keys
    c.sk = sk
    -- Every reply that names the ranking also tells podium the keys, so
    -- it can read the codes without asking for the config.
    c.rk = c.ranking .. '|' .. sk
  end
  return c
end

-- -1, 0 or 1: a before, equal to or after b, by bytes (equal lengths).
local function bcmp(a, b)
  if a == b then return 0 end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      if x < y then return -1 end
      return 1
    end
  end
  return 0
end

-- An 8-byte code's complement.
local function notb(s)
  local b = {string.byte(s, 1, 8)}
  for i = 1, 8 do b[i] = 255 - b[i] end
  return string.char(unpack(b))
end

-- The next string of the same length in byte order (nil after all 0xFF).
local function succ(c)
  local i = #c
  while i > 0 and string.byte(c, i) == 255 do i = i - 1 end
  if i == 0 then return nil end
  return string.sub(c, 1, i - 1) .. string.char(string.byte(c, i) + 1) .. string.rep('\0', #c - i)
end

-- A value code (8 bytes, unsigned order = numeric order) as two 32-bit
-- halves, and back: Lua's numbers are doubles, exact only to 2^53.
local function halves(s)
  local a, b, c, d, e, f, g, h = string.byte(s, 1, 8)
  return ((a * 256 + b) * 256 + c) * 256 + d, ((e * 256 + f) * 256 + g) * 256 + h
end

local function from_halves(hi, lo)
  return string.char(math.floor(hi / 16777216) % 256, math.floor(hi / 65536) % 256,
    math.floor(hi / 256) % 256, hi % 256, math.floor(lo / 16777216) % 256,
    math.floor(lo / 65536) % 256, math.floor(lo / 256) % 256, lo % 256)
end

-- An int key's value code is the value + 2^63: the sum of two values is
-- a + b - 2^63 in codes, nil when it leaves the 64-bit range.
local function int_add(a, b)
  local ah, al = halves(a)
  local bh, bl = halves(b)
  local lo, carry = al + bl, 0
  if lo >= 4294967296 then lo, carry = lo - 4294967296, 1 end
  local hi = ah + bh + carry - 2147483648
  if hi < 0 or hi >= 4294967296 then return nil end
  return from_halves(hi, lo)
end

-- A float key's value code is the double's bits with the sign bit set
-- (positive) or all bits flipped (negative), as the engine's.
local function float_of(vc)
  local b1 = string.byte(vc, 1)
  local raw
  if b1 >= 128 then raw = string.char(b1 - 128) .. string.sub(vc, 2) else raw = notb(vc) end
  return (struct.unpack('>d', raw))
end

local function code_of_float(x)
  -- -0 shares 0's code.
  if x == 0 then x = 0 end
  local raw = struct.pack('>d', x)
  local b1 = string.byte(raw, 1)
  if b1 >= 128 then return notb(raw) end
  return string.char(b1 + 128) .. string.sub(raw, 2)
end

-- A member's score in Z on a board with sort keys: its first key's value
-- as a double (an int key's rounded as podium rounds it), printed to
-- read back exactly. Scores so ordered agree with the members' bytes,
-- which start with that key's value code, so Z is in byte order as a
-- whole (what ZLEXCOUNT and BYLEX walk by) while most steps down its skip
-- list are decided by the score held in the node, not by the bytes.
local function kscore(c)
  local vc = string.sub(c, 1, 8)
  local x
  if cfg.keys[1].int then
    local hi, lo = halves(vc)
    x = (hi - 2147483648) * 4294967296 + lo
  else
    x = float_of(vc)
  end
  return string.format('%.17g', x)
end

-- A member of Z on a board with sort keys: its id, and its codes.
local function idof(e)
  return string.sub(e, cfg.pl + 1)
end

local function codes_of(e)
  return string.sub(e, 1, cfg.pl)
end

-- Key j's stored code in a tuple of codes.
local function key_code(c, j)
  return string.sub(c, 8 * j - 7, 8 * j)
end

-- The tuple's value codes (complemented keys turned back), whose byte
-- order is the numeric order of the tuples, key by key (`cond`).
local function values_of(c)
  local out = {}
  for j, k in ipairs(cfg.keys) do
    local x = key_code(c, j)
    if k.flip then x = notb(x) end
    out[j] = x
  end
  return table.concat(out)
end

-- Whether tuple a ranks strictly better than b.
local function kbetter(a, b)
  if cfg.asc then return bcmp(a, b) < 0 end
  return bcmp(a, b) > 0
end

-- The board's bounds on the first key (its code: never complemented).
local function kin_bounds(c)
  local f = string.sub(c, 1, 8)
  if cfg.blo and bcmp(f, cfg.blo) < 0 then return false end
  if cfg.bhi and bcmp(f, cfg.bhi) > 0 then return false end
  return true
end

-- An update's new tuple from the stored one `old`, the submitted codes
-- `g` and an action per key ('-' keep, 's' set, 'i' add, 'x' max, 'n'
-- min), or nil and the item's error.
local function apply_keys(old, g, act)
  local parts = {}
  for j, k in ipairs(cfg.keys) do
    local a = string.sub(act, j, j)
    local o = key_code(old, j)
    local v = o
    if a ~= '-' then
      local x = key_code(g, j)
      if a == 's' then
        v = x
      elseif a == 'x' or a == 'n' then
        local c = bcmp(x, o)
        if k.flip then c = -c end
        if (a == 'x' and c > 0) or (a == 'n' and c < 0) then v = x end
      else
        local vo, vx = o, x
        if k.flip then vo, vx = notb(o), notb(x) end
        local r
        if k.int then
          r = int_add(vo, vx)
          if not r then return nil, {'err', 'ovf', j} end
        else
          local s = float_of(vo) + float_of(vx)
          if s ~= s then return nil, {'err', 'nanres'} end
          r = code_of_float(s)
        end
        if k.flip then r = notb(r) end
        v = r
      end
    end
    parts[j] = v
  end
  return table.concat(parts)
end

local function load_cfg()
  local v = redis.call('HMGET', C, 'order', 'ranking', 'update', 'min', 'max', 'cap', 'maxdata', 'ro', 'sf', 'ix',
    'sl', 'sk', 'blo', 'bhi', 'rs')
  if not v[1] then return nil end
  local sf = {}
  for f in string.gmatch(v[9] or 'name', '%S+') do sf[#sf + 1] = f end
  return sorted_cfg({
    sf = sf,
    asc = v[1] == 'asc', ranking = v[2], update = v[3],
    minstr = v[4] or '-inf', maxstr = v[5] or 'inf',
    min = tonumber(v[4] or '-inf'), max = tonumber(v[5] or 'inf'),
    cap = v[6] and tonumber(v[6]), maxdata = tonumber(v[7]), ro = v[8] == '1',
    -- The prefix and word sets: '0' not built (only the sources in I are
    -- kept), 'b<token>' being built (see ops.index), '1' or absent (a
    -- board from before lazy indexing) built and kept by every write.
    ix = v[10] or '1',
    blo = v[13] and unhex(v[13]), bhi = v[14] and unhex(v[14]), rs = v[15],
  }, v[11], v[12])
end

-- A member's score (as Redis prints it) or, on a board with sort keys,
-- its codes; nil when it is not on the board.
local function mscore(m)
  if cfg.pl > 0 then return redis.call('HGET', T, m) or nil end
  return redis.call('ZSCORE', Z, m) or nil
end

-- Best-first position (0-based) of a member, or false.
local function pos_of(m)
  if cfg.pl > 0 then
    local c = redis.call('HGET', T, m)
    if not c then return false end
    m = c .. m
  end
  if cfg.asc then return redis.call('ZRANK', Z, m) end
  return redis.call('ZREVRANK', Z, m)
end

-- How many entries of `key` have a strictly better score than the score
-- string s (on a board with sort keys: a better tuple than the codes s,
-- counted by bytes: Z's order is its members' byte order, see kscore).
local function better_in(key, s)
  if cfg.pl > 0 then
    if cfg.asc then return redis.call('ZLEXCOUNT', key, '-', '(' .. s) end
    local n = succ(s)
    if not n then return 0 end
    return redis.call('ZLEXCOUNT', key, '[' .. n, '+')
  end
  if cfg.asc then return redis.call('ZCOUNT', key, '-inf', '(' .. s) end
  return redis.call('ZCOUNT', key, '(' .. s, '+inf')
end

-- Members strictly better than s: competition rank minus one, and the
-- complement of the percentile.
local function better(s)
  return better_in(Z, s)
end

-- What a rank is counted from: on a dense board the distinct better
-- scores, else the better members.
local function rank_better(s)
  if cfg.ranking == 'dense' then return better_in(U, s) end
  return better_in(Z, s)
end

-- Dense boards keep each distinct score once in U (member = the score as
-- Redis prints it; ±0 as 0, as they compare equal) and its count in K.
local function dkey(s)
  if cfg.pl > 0 then return s end
  if tonumber(s) == 0 then return '0' end
  return s
end

local function dist_add(s)
  if cfg.ranking ~= 'dense' then return end
  local k = dkey(s)
  if redis.call('HINCRBY', K, k, 1) == 1 then
    if cfg.pl > 0 then redis.call('ZADD', U, 0, k) else redis.call('ZADD', U, k, k) end
  end
end

local function dist_del(s)
  if cfg.ranking ~= 'dense' then return end
  local k = dkey(s)
  if redis.call('HINCRBY', K, k, -1) <= 0 then
    redis.call('HDEL', K, k)
    redis.call('ZREM', U, k)
  end
end

local function rebuild_distinct()
  redis.call('DEL', U, K)
  if cfg.ranking ~= 'dense' then return end
  local n = redis.call('ZCARD', Z)
  for a = 0, n - 1, 1000 do
    if cfg.pl > 0 then
      local ms = redis.call('ZRANGE', Z, a, a + 999)
      for i = 1, #ms do dist_add(codes_of(ms[i])) end
    else
      local ms = redis.call('ZRANGE', Z, a, a + 999, 'WITHSCORES')
      for i = 2, #ms, 2 do dist_add(ms[i]) end
    end
  end
end

local function improves(new, old)
  if cfg.asc then return new < old end
  return new > old
end

local function in_bounds(x)
  return not (x < cfg.min or x > cfg.max)
end

-- unpack() is bounded by Lua's C stack, so variadic commands go in pieces.
local function chunks(list, f)
  local i = 1
  while i <= #list do
    local j = math.min(i + 999, #list)
    f({unpack(list, i, j)})
    i = j + 1
  end
end

local function hmget(key, mems)
  -- A page's worth in one call, without chunks' copy and closure.
  if #mems > 0 and #mems <= 1000 then return redis.call('HMGET', key, unpack(mems)) end
  local out = {}
  chunks(mems, function(part)
    local v = redis.call('HMGET', key, unpack(part))
    for k = 1, #v do out[#out + 1] = v[k] end
  end)
  return out
end

-- The ids of members of Z, in place (on a board with sort keys they
-- follow the codes).
local function ids_of(es)
  if cfg.pl > 0 then
    for i = 1, #es do es[i] = idof(es[i]) end
  end
  return es
end

-- ------------------------------------------------------------ search
-- A member's sources (`I`): the words of every text it could be searched
-- by, tokenised by podium (NFKD, folding: Lua cannot), one line each:
-- its id's words; `-` (no display name) or `=` and the name's words; then
-- `key word...` per data key. Which of them are indexed depends on the
-- board's search_fields, so a change of those needs no re-tokenising.

local function lines_of(s)
  local out, i = {}, 1
  while true do
    local j = string.find(s, '\n', i, true)
    if not j then
      out[#out + 1] = string.sub(s, i)
      return out
    end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end

-- The indexed words of a member, {field number (1-based), word} in field
-- order, as the engine's record: the name field is the display name, or
-- the id when there is none; at most MAX_WORDS.
local function record(src, sf)
  local L = lines_of(src)
  local name = L[2] or '-'
  local data = {}
  for k = 3, #L do
    local sp = string.find(L[k], ' ', 1, true)
    if sp then data[string.sub(L[k], 1, sp - 1)] = string.sub(L[k], sp + 1) else data[L[k]] = '' end
  end
  local out = {}
  for fi, f in ipairs(sf) do
    local text
    if f == 'name' then
      if string.sub(name, 1, 1) == '=' then text = string.sub(name, 2) else text = L[1] end
    else
      text = data[f]
    end
    if text then
      for w in string.gmatch(text, '%S+') do
        if #out >= MAX_WORDS then return out end
        out[#out + 1] = {fi, w}
      end
    end
  end
  return out
end

-- Counts into `set` the index keys of a record: every prefix of every
-- word, cut at UTF-8 character boundaries (a query word is whole chars),
-- and the word's exact set; each key's count is how many of the record's
-- words it holds (the member's score in that set).
local function prefix_keys(rec, set)
  for _, e in ipairs(rec) do
    local w = e[2]
    if #w <= MAX_PREFIX then set[XBASE .. w] = (set[XBASE .. w] or 0) + 1 end
    for i = 1, math.min(#w, MAX_PREFIX) do
      local b = string.byte(w, i + 1)
      if not b or b < 128 or b >= 192 then
        local k = WBASE .. string.sub(w, 1, i)
        set[k] = (set[k] or 0) + 1
      end
    end
  end
  return set
end

-- A member's sources when `I` has no entry for it: its id is its only
-- word (no name, no data). Bulk loads (`import`, plain batches) write no
-- `I` entry for a member whose id podium tokenised to itself, so for every
-- member of Z the sources are `I`'s value or, when absent, this.
local function plain_src(m)
  return m .. '\n-'
end

-- The sources of a member of Z.
local function src_of(m)
  return redis.call('HGET', I, m) or plain_src(m)
end

-- Moves member m's index entries from its stored sources to `new` (nil:
-- the member left). `fresh`: m was not on the board before this write
-- (so it has no index entries and no sources yet). A member's score in
-- a prefix or word set is how many of its indexed words the set stands
-- for (a search asks for at least as many as its query words need, see
-- ops.search); the board score comes from intersecting with Z, so a
-- score change touches no set.
--
-- Until a board's first search (ix '0') only the sources are kept. While
-- the sets are being built (ix 'b…') a member's new keys are all written,
-- not only those whose count changed: the build may not have reached the
-- member yet, so its old keys may be missing (the build's own write of
-- the member later is the same, so the order does not matter).
--
-- Sources equal to plain_src(m) are not stored (an absent entry means
-- them), so a member renamed back to none stops costing an `I` field.
local function reindex(m, new, fresh)
  local keep = new and new ~= plain_src(m)
  if cfg.ix == '0' then
    if keep then
      redis.call('HSET', I, m, new)
    elseif not fresh then
      redis.call('HDEL', I, m)
    end
    return
  end
  local old
  if not fresh then old = src_of(m) end
  if old == new then return end
  if #cfg.sf > 0 then
    local full = string.sub(cfg.ix, 1, 1) == 'b'
    local a, b = {}, {}
    if old then prefix_keys(record(old, cfg.sf), a) end
    if new then prefix_keys(record(new, cfg.sf), b) end
    for k in pairs(a) do if not b[k] then redis.call('ZREM', k, m) end end
    for k, c in pairs(b) do if full or a[k] ~= c then redis.call('ZADD', k, c, m) end end
  end
  if keep then
    redis.call('HSET', I, m, new)
  elseif not fresh then
    redis.call('HDEL', I, m)
  end
end

-- The sources after a write: `words` is the entry's tokenised id, name
-- and data (lines as in I); name and data arguments as set_extra's.
local function sources(m, name, data, words, fresh)
  local W = lines_of(words)
  -- (A member new to the board has none.)
  local old = (not fresh) and redis.call('HGET', I, m)
  local O = old and lines_of(old)
  local out = {W[1]}
  if name == '-' then
    out[2] = (O and O[2]) or '-'
  elseif name == '=' then
    out[2] = '-'
  else
    out[2] = '=' .. (W[2] or '')
  end
  if data == '-' then
    if O then for k = 3, #O do out[#out + 1] = O[k] end end
  else
    for k = 3, #W do out[#out + 1] = W[k] end
  end
  return table.concat(out, '\n')
end

-- Drops every prefix set of the board (as indexed for fields sf, in
-- index state ix; a partly built index has at most these keys).
local function drop_index(sf, ix)
  if #sf == 0 or ix == '0' then return end
  local set = {}
  -- Every member of Z (plain sources are not in I); Z is still whole.
  local n = redis.call('ZCARD', Z)
  for a = 0, n - 1, 1000 do
    local ms = ids_of(redis.call('ZRANGE', Z, a, a + 999))
    local src = hmget(I, ms)
    for k = 1, #ms do prefix_keys(record(src[k] or plain_src(ms[k]), sf), set) end
  end
  local ks = {}
  for k in pairs(set) do ks[#ks + 1] = k end
  chunks(ks, function(part) redis.call('UNLINK', unpack(part)) end)
end

-- The board has no sets any more (none yet, or dropped): writes keep
-- only the sources until the next search builds them.
local function unindexed()
  redis.call('HSET', C, 'ix', '0')
  cfg.ix = '0'
end

-- Whether every query token takes a distinct word of rec (Kuhn's
-- augmenting paths, as the engine's matcher): tokens are {w, p (prefix),
-- f (field number, 0 = any)}.
local function matches(toks, rec)
  if #rec < #toks then return false end
  local adj = {}
  for t, tk in ipairs(toks) do
    local a = {}
    for i, e in ipairs(rec) do
      if tk.f == 0 or tk.f == e[1] then
        local ok
        if tk.p then ok = string.sub(e[2], 1, #tk.w) == tk.w else ok = e[2] == tk.w end
        if ok then a[#a + 1] = i end
      end
    end
    if #a == 0 then return false end
    adj[t] = a
  end
  local owner, seen = {}, {}
  local function augment(t)
    for _, i in ipairs(adj[t]) do
      if not seen[i] then
        seen[i] = true
        if not owner[i] or augment(owner[i]) then
          owner[i] = t
          return true
        end
      end
    end
    return false
  end
  for t = 1, #toks do
    seen = {}
    if not augment(t) then return false end
  end
  return true
end

-- Names, data and search words of members that left the board.
local function forget(mems)
  if cfg.ix ~= '0' then
    for _, m in ipairs(mems) do reindex(m, nil, false) end
  end
  chunks(mems, function(part)
    redis.call('HDEL', N, unpack(part))
    redis.call('HDEL', D, unpack(part))
    if cfg.pl > 0 then redis.call('HDEL', T, unpack(part)) end
    if cfg.ix == '0' then redis.call('HDEL', I, unpack(part)) end
  end)
end

local function zrem(mems)
  local n = 0
  if cfg.ranking == 'dense' or cfg.pl > 0 then
    -- One by one: each removed score leaves the distinct set once, even
    -- when a member is listed twice (and on a board with sort keys, Z's
    -- member is found from the codes).
    for _, m in ipairs(mems) do
      local sc = mscore(m)
      if sc then
        if cfg.pl > 0 then
          redis.call('ZREM', Z, sc .. m)
          redis.call('HDEL', T, m)
        else
          redis.call('ZREM', Z, m)
        end
        dist_del(sc)
        touch(m)
        n = n + 1
      end
    end
    forget(mems)
    return n
  end
  chunks(mems, function(part)
    if LISTENED then
      local v = redis.call('ZMSCORE', Z, unpack(part))
      for k = 1, #v do
        if v[k] then touch(part[k]) end
      end
    end
    n = n + redis.call('ZREM', Z, unpack(part))
  end)
  forget(mems)
  return n
end

-- Best-first positions a..b inclusive.
local function zwindow(a, b, withscores)
  local args = {'ZRANGE', Z, a, b}
  if not cfg.asc then args[#args + 1] = 'REV' end
  if withscores then args[#args + 1] = 'WITHSCORES' end
  return redis.call(unpack(args))
end

-- A page's {member, score, ...} as {entries, one string}, the strings
-- joined by byte 0xFF, which no member holds (podium writes UTF-8 ids
-- only, and UTF-8 never has that byte) and no score does: one value in
-- the reply instead of two per entry, which podium decodes with one
-- allocation instead of two per entry, and less Redis time than
-- converting each string into the reply. podium checks the count: a
-- member holding 0xFF (not written by podium) would show as a page of
-- the wrong length.
local function packed(ms)
  if #ms == 0 then return ms end
  return {#ms / 2, table.concat(ms, '\255')}
end

-- The page's members (odd places of {member, score, ...}).
local function members_of(ms)
  local mems = {}
  for i = 1, #ms, 2 do mems[#mems + 1] = ms[i] end
  return mems
end

-- The values of hash `key` for a page's members, or 0 when none has one
-- (a page of a board without names or data: one value in the reply
-- instead of one per entry). An empty hash is not even asked (HLEN is
-- O(1); HMGET converts and looks up every member), nor the members
-- listed. `mems`: the page's ids.
local function page_vals(key, mems)
  if redis.call('HLEN', key) == 0 then return 0 end
  local v = hmget(key, mems)
  for i = 1, #mems do
    if v[i] then return v end
  end
  return 0
end

-- page_vals of a page given as {member, score, ...}.
local function page_values(key, ms)
  if redis.call('HLEN', key) == 0 then return 0 end
  return page_vals(key, members_of(ms))
end

-- A page of the board: {total, first position, the page's {member,
-- score, ...} packed (see packed), better-than count of the first score
-- (0 on a unique board, whose ranks are positions), names and data (or
-- 0: none, or not asked for), ranking}.
local function window(a, b, with_data)
  local total = redis.call('ZCARD', Z)
  if a < 0 then a = 0 end
  if b > total - 1 then b = total - 1 end
  if a > b then return {total, a, {}, 0, 0, 0, cfg.rk} end
  if cfg.pl > 0 then
    -- Members carry their codes, which may hold any byte: the page is a
    -- list, after a marker, rather than packed.
    local es = zwindow(a, b, false)
    local ids = {}
    for i, e in ipairs(es) do ids[i] = idof(e) end
    local data = 0
    if with_data then data = page_vals(D, ids) end
    local first = 0
    if cfg.ranking ~= 'unique' then first = rank_better(codes_of(es[1])) end
    table.insert(es, 1, 's')
    return {total, a, es, first, page_vals(N, ids), data, cfg.rk}
  end
  local ms = zwindow(a, b, true)
  local data = 0
  if with_data then data = page_values(D, ms) end
  local first = 0
  if cfg.ranking ~= 'unique' then first = rank_better(ms[2]) end
  return {total, a, packed(ms), first, page_values(N, ms), data, cfg.rk}
end

-- max_members: drops the worst beyond the cap; returns how many.
local function evict()
  if not cfg.cap then return 0 end
  local over = redis.call('ZCARD', Z) - cfg.cap
  if over <= 0 then return 0 end
  local popped
  -- The worst end in the board's order: ties at the bottom of a desc board
  -- are the smallest members, which ZPOPMIN takes first.
  if cfg.asc then popped = redis.call('ZPOPMAX', Z, over) else popped = redis.call('ZPOPMIN', Z, over) end
  local mems = {}
  for i = 1, #popped, 2 do
    if cfg.pl > 0 then
      mems[#mems + 1] = idof(popped[i])
      dist_del(codes_of(popped[i]))
    else
      mems[#mems + 1] = popped[i]
      dist_del(popped[i + 1])
    end
    touch(mems[#mems])
  end
  forget(mems)
  return over
end

-- A name or data argument: '-' leaves it, '=' .. value sets it ('=' alone
-- clears it).
local function set_extra(key, m, arg)
  if arg == '-' then return end
  local v = string.sub(arg, 2)
  if v == '' then redis.call('HDEL', key, m) else redis.call('HSET', key, m, v) end
end

local function check_extra(name, data)
  if name ~= '-' and #name - 1 > MAX_NAME then return fail('name', MAX_NAME) end
  if data == '!' then return fail('dataobj') end
  if data ~= '-' and #data - 1 > cfg.maxdata then return fail('data', cfg.maxdata, #data - 1) end
  return nil
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A re-sort (ops.resort_begin) holds the board while its lease runs:
-- `rs` is 'token deadline done total'. Writes wait for it (podium
-- retries them); one whose podium stopped is dropped when its lease
-- ends, leaving the board as it was before it.
local function resort_busy()
  if not cfg.rs then return false end
  local deadline = string.match(cfg.rs, '^%S+ (%d+)')
  if deadline and tonumber(deadline) > now_ms() then return true end
  redis.call('HDEL', C, 'rs')
  redis.call('DEL', RZ, RT)
  cfg.rs = nil
  return false
end

local function writable()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  if cfg.ro then return fail('ro') end
  if resort_busy() then return fail('resorting') end
  return nil
end

local function readable()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  return nil
end

-- For the plain reads (pages, ranks, counts): the config's order and
-- ranking are all they use, and one HMGET of those two costs about 2 µs
-- less of Redis time than load_cfg, a tenth of a page read.
local function viewable()
  local v = redis.call('HMGET', C, 'order', 'ranking', 'sl', 'sk')
  if not v[1] then return fail('noboard') end
  cfg = sorted_cfg({asc = v[1] == 'asc', ranking = v[2]}, v[3], v[4])
  return nil
end

local ops = {}

-- The sources of a bulk path's new members (`olds[k]` false): each its
-- id's words (the first line of `words(k)`), no name, no data, as
-- `sources` makes them for a member with neither; stored, or indexed
-- when the board's sets exist.
local function index_fresh(mems, olds, words)
  local fresh = {}
  for k = 1, #mems do
    if not olds[k] then
      local w = words(k)
      local nl = string.find(w, '\n', 1, true)
      if nl then w = string.sub(w, 1, nl - 1) end
      fresh[#fresh + 1] = mems[k]
      fresh[#fresh + 1] = w .. '\n-'
    end
  end
  if cfg.ix == '0' then
    -- Plain sources are not stored (see plain_src).
    local kept = {}
    for a = 1, #fresh, 2 do
      if fresh[a + 1] ~= plain_src(fresh[a]) then
        kept[#kept + 1] = fresh[a]
        kept[#kept + 1] = fresh[a + 1]
      end
    end
    for a = 1, #kept, 1000 do
      redis.call('HSET', I, unpack(kept, a, math.min(a + 999, #kept)))
    end
  else
    for a = 1, #fresh, 2 do reindex(fresh[a], fresh[a + 1], true) end
  end
end

-- A batch of plain `set`s (no only/cond, no name or data, each member
-- once) on a board without a cap that is not dense: every entry is
-- applied and none can fail (bounds were checked), so the batch is one
-- ZMSCORE and one multi-member ZADD per 500 entries instead of a dozen
-- calls per entry. Each entry's rank must still be the one it had right
-- after it was applied, with the later entries of the batch not yet in:
-- the script returns each entry's previous score and its position (or
-- better-than count) in the final board, and podium takes off the later
-- entries that moved ahead of it and puts back those whose previous score
-- was ahead (redis.rs, `sequential_ranks`). Reply: {ranking, 'fast', asc
-- (1/0), previous scores (false: new), final positions (unique) or
-- better-than counts}.
local function submit_fast(n)
  local mems = {}
  for i = 0, n - 1 do mems[i + 1] = ARGV[3 + i * 8] end
  local olds = {}
  chunks(mems, function(part)
    local v = redis.call('ZMSCORE', Z, unpack(part))
    for k = 1, #v do olds[#olds + 1] = v[k] end
  end)
  for a = 1, n, 500 do
    local args = {'ZADD', Z}
    for k = a, math.min(a + 499, n) do
      local b = 3 + (k - 1) * 8
      args[#args + 1] = ARGV[b + 1]
      args[#args + 1] = ARGV[b]
    end
    redis.call(unpack(args))
  end
  index_fresh(mems, olds, function(k) return ARGV[3 + (k - 1) * 8 + 7] end)
  if LISTENED then
    for k = 1, n do
      if not olds[k] or tonumber(olds[k]) ~= tonumber(ARGV[3 + (k - 1) * 8 + 1]) then touch(mems[k]) end
    end
  end
  local at = {}
  for k = 1, n do
    if cfg.ranking == 'unique' then
      at[k] = pos_of(mems[k])
    else
      at[k] = better(ARGV[3 + (k - 1) * 8 + 1])
    end
  end
  return {cfg.ranking, 'fast', cfg.asc and 1 or 0, olds, at}
end

-- ARGV: n, then per entry: member, score, op ('' = the board's), presence
-- (a/n/e), cond (a/g/l), name, data, words (see `sources`). Reply:
-- {ranking, item...}, or submit_fast's.
function ops.submit()
  local e = writable(); if e then return e end
  -- A board with sort keys takes ksubmit (podium learns that it has).
  if cfg.pl > 0 then return fail('stale') end
  local n = tonumber(ARGV[2])
  local fast, seen = n > 0 and not cfg.cap and cfg.ranking ~= 'dense', {}
  -- Input errors refuse the whole batch before anything is applied.
  for i = 0, n - 1 do
    local b = 3 + i * 8
    local m, s, op, name, data = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 5], ARGV[b + 6]
    if #m == 0 or #m > MAX_MEMBER then return fail('member', #m) end
    local x = tonumber(s)
    if x ~= x then return fail('nan') end
    e = check_extra(name, data); if e then return e end
    if op == '' then op = cfg.update end
    if op ~= 'incr' and not in_bounds(x) then return fail('oob', s, '-', cfg.minstr, cfg.maxstr) end
    if fast then
      if op ~= 'set' or ARGV[b + 3] ~= 'a' or ARGV[b + 4] ~= 'a' or name ~= '-' or data ~= '-' or seen[m] then
        fast = false
      else
        seen[m] = true
      end
    end
  end
  if fast then return submit_fast(n) end
  local out = {cfg.ranking}
  for i = 0, n - 1 do
    local b = 3 + i * 8
    local m, s, op, pres, cond, name, data =
      ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
    if op == '' then op = cfg.update end
    local x = tonumber(s)
    local olds = redis.call('ZSCORE', Z, m)
    if not olds then
      if pres == 'e' then
        out[#out + 1] = {'absent'}
      elseif not in_bounds(x) then
        -- an absent member counts as 0 for incr, as in Redis
        out[#out + 1] = {'err', 'oob', s, '-', cfg.minstr, cfg.maxstr}
      else
        redis.call('ZADD', Z, s, m)
        dist_add(redis.call('ZSCORE', Z, m))
        touch(m)
        set_extra(N, m, name)
        set_extra(D, m, data)
        reindex(m, sources(m, name, data, ARGV[b + 7]), true)
        local ev = evict()
        local p = pos_of(m)
        if p then
          local sc = redis.call('ZSCORE', Z, m)
          out[#out + 1] = {'new', sc, p, rank_better(sc), ev}
        else
          out[#out + 1] = {'evicted', ev}
        end
      end
    else
      local old = tonumber(olds)
      local new
      -- As Redis: NX on an existing member stops before any arithmetic.
      if pres == 'n' then new = old elseif op == 'incr' then new = old + x else new = x end
      if new ~= new then
        out[#out + 1] = {'err', 'nanres'}
      else
        local blocked = pres == 'n'
          or (op == 'best' and not improves(new, old))
          or (cond == 'g' and not (new > old))
          or (cond == 'l' and not (new < old))
        local changed = (not blocked) and new ~= old
        if changed and not in_bounds(new) then
          local base = '-'
          if op == 'incr' then base = olds end
          out[#out + 1] = {'err', 'oob', s, base, cfg.minstr, cfg.maxstr}
        else
          set_extra(N, m, name)
          set_extra(D, m, data)
          if name ~= '-' or data ~= '-' then reindex(m, sources(m, name, data, ARGV[b + 7]), false) end
          local sc
          if changed then
            dist_del(olds)
            if op == 'incr' then
              sc = redis.call('ZINCRBY', Z, s, m)
            else
              redis.call('ZADD', Z, s, m)
              sc = s
            end
          elseif blocked or op == 'incr' then
            sc = olds
          else
            sc = s
          end
          local cur = redis.call('ZSCORE', Z, m)
          if changed then
            dist_add(cur)
            touch(m)
          end
          out[#out + 1] = {'upd', sc, pos_of(m), rank_better(cur), olds, blocked and 0 or 1, changed and 1 or 0}
        end
      end
    end
  end
  return out
end

-- ksubmit of a batch of plain sets (every key set, no only/cond, no name
-- or data, each member once) on a board without a cap that is not dense:
-- every entry is applied as given (podium checked the bounds), so the
-- batch is one HMGET of the codes before, one ZREM of the members they
-- made, one multi-member ZADD and HSET per 500 entries, then each
-- entry's place in the final board, as submit_fast does for scores
-- (podium works out the places each had right after it was applied).
-- Reply: {ranking and keys, 'fast', asc (1/0), codes before (false:
-- new), final positions (unique) or better-than counts}.
local function ksubmit_fast(n)
  local mems, els = {}, {}
  for k = 1, n do
    local b = 4 + (k - 1) * 10
    mems[k] = ARGV[b]
    els[k] = ARGV[b + 1] .. ARGV[b]
  end
  local olds = hmget(T, mems)
  for a = 1, n, 500 do
    local zrem, zadd, hset = {}, {}, {}
    for k = a, math.min(a + 499, n) do
      local b = 4 + (k - 1) * 10
      if olds[k] then zrem[#zrem + 1] = olds[k] .. mems[k] end
      -- podium sends the first key's score (kscore's) with the codes.
      zadd[#zadd + 1] = ARGV[b + 9]
      zadd[#zadd + 1] = els[k]
      hset[#hset + 1] = mems[k]
      hset[#hset + 1] = ARGV[b + 1]
    end
    if #zrem > 0 then redis.call('ZREM', Z, unpack(zrem)) end
    redis.call('ZADD', Z, unpack(zadd))
    redis.call('HSET', T, unpack(hset))
  end
  index_fresh(mems, olds, function(k) return ARGV[4 + (k - 1) * 10 + 8] end)
  if LISTENED then
    for k = 1, n do
      if olds[k] ~= ARGV[4 + (k - 1) * 10 + 1] then touch(mems[k]) end
    end
  end
  local at = {}
  for k = 1, n do
    if cfg.ranking == 'unique' then
      if cfg.asc then at[k] = redis.call('ZRANK', Z, els[k]) else at[k] = redis.call('ZREVRANK', Z, els[k]) end
    else
      at[k] = better_in(Z, ARGV[4 + (k - 1) * 10 + 1])
    end
  end
  return {cfg.rk, 'fast', cfg.asc and 1 or 0, olds, at}
end

-- A batch for a board with sort keys, checked by podium against the
-- config it names (with the engine's own checks: members, names, data,
-- key names and types, bounds of a set or best), which the script
-- compares first: {'stale'} error when the board changed since. ARGV:
-- that config JSON, n, then per entry: member, codes (every key's; a key
-- not submitted holds its zero, what a new member gets), an action per
-- key ('-' keep, 's' set, 'i' add, 'x' max, 'n' min: podium resolves the
-- update rule and the keys' operators), update ('s' set, 'b' best, 'i'
-- incr), presence, cond, name, data, words (as submit's), the score of
-- the codes (kscore's, which podium computes alike). Reply:
-- {ranking and keys, item...}; an item is {'absent'}, {'evicted', n},
-- {'new', codes, position, better, evicted}, {'upd', codes now,
-- position, better, codes before, applied, changed} or {'err', ...}.
function ops.ksubmit()
  local e = writable(); if e then return e end
  if cfg.pl == 0 or redis.call('HGET', C, 'json') ~= ARGV[2] then return fail('stale') end
  local n = tonumber(ARGV[3])
  if n > 0 and not cfg.cap and cfg.ranking ~= 'dense' then
    local fast, seen = true, {}
    for i = 0, n - 1 do
      local b = 4 + i * 10
      local m = ARGV[b]
      if ARGV[b + 3] ~= 's' or ARGV[b + 4] ~= 'a' or ARGV[b + 5] ~= 'a' or ARGV[b + 6] ~= '-'
        or ARGV[b + 7] ~= '-' or seen[m] or string.find(ARGV[b + 2], '[^s]') then
        fast = false
        break
      end
      seen[m] = true
    end
    if fast then return ksubmit_fast(n) end
  end
  local out = {cfg.rk}
  for i = 0, n - 1 do
    local b = 4 + i * 10
    local m, g, act, op, pres, cond = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
    local name, data, words = ARGV[b + 6], ARGV[b + 7], ARGV[b + 8]
    local old = redis.call('HGET', T, m)
    if not old then
      if pres == 'e' then
        out[#out + 1] = {'absent'}
      elseif not kin_bounds(g) then
        out[#out + 1] = {'err', 'koob', string.sub(g, 1, 8)}
      else
        redis.call('ZADD', Z, ARGV[b + 9], g .. m)
        redis.call('HSET', T, m, g)
        dist_add(g)
        touch(m)
        set_extra(N, m, name)
        set_extra(D, m, data)
        reindex(m, sources(m, name, data, words, true), true)
        local ev = evict()
        local p
        if cfg.asc then p = redis.call('ZRANK', Z, g .. m) else p = redis.call('ZREVRANK', Z, g .. m) end
        if p then
          local better = 0
          if cfg.ranking ~= 'unique' then better = rank_better(g) end
          out[#out + 1] = {'new', g, p, better, ev}
        else
          out[#out + 1] = {'evicted', ev}
        end
      end
    else
      local new, err = old, nil
      -- As Redis: NX on an existing member stops before any arithmetic.
      if pres ~= 'n' then new, err = apply_keys(old, g, act) end
      if err then
        out[#out + 1] = err
      else
        local blocked = pres == 'n'
          or (op == 'b' and not kbetter(new, old))
          or (cond == 'g' and bcmp(values_of(new), values_of(old)) <= 0)
          or (cond == 'l' and bcmp(values_of(new), values_of(old)) >= 0)
        local changed = (not blocked) and new ~= old
        if changed and not kin_bounds(new) then
          out[#out + 1] = {'err', 'koob', string.sub(new, 1, 8)}
        else
          set_extra(N, m, name)
          set_extra(D, m, data)
          if name ~= '-' or data ~= '-' then reindex(m, sources(m, name, data, words), false) end
          if changed then
            redis.call('ZREM', Z, old .. m)
            redis.call('ZADD', Z, kscore(new), new .. m)
            redis.call('HSET', T, m, new)
            dist_del(old)
            dist_add(new)
            touch(m)
          end
          local now = old
          if not blocked then now = new end
          local better = 0
          if cfg.ranking ~= 'unique' then better = rank_better(now) end
          out[#out + 1] = {'upd', now, pos_of(m), better, old, blocked and 0 or 1, changed and 1 or 0}
        end
      end
    end
  end
  return out
end

-- Whether a board takes an import batch by multi-member ZADDs alone: its
-- update is `set`, it has no bounds, no cap and is not dense (what could
-- refuse, block or evict an entry, or needs per-entry bookkeeping).
local function takes_imports()
  return cfg.pl == 0 and cfg.update == 'set' and not cfg.cap and cfg.ranking ~= 'dense'
    and cfg.min == -math.huge and cfg.max == math.huge
end

-- Why the board cannot take an import batch as a bare ZADD (nil: it can):
-- no board, read-only, a config that needs the script's per-entry paths
-- (takes_imports, read here from the fields alone: this runs twice per
-- batch), or search sets that new members must join (built or being
-- built).
local function zadd_refusal()
  local v = redis.call('HMGET', C, 'order', 'ro', 'update', 'cap', 'ranking', 'min', 'max', 'ix', 'sl', 'rs')
  if not v[1] then return 'noboard' end
  if v[2] == '1' then return 'ro' end
  -- (A board being re-sorted takes the batch through submit, which
  -- waits for it.)
  if v[3] ~= 'set' or v[4] or v[5] == 'dense' or v[9] or v[10]
    or (v[6] and tonumber(v[6]) ~= -math.huge) or (v[7] and tonumber(v[7]) ~= math.huge) then
    return 'no'
  end
  if (v[8] or '1') ~= '0' then return 'indexed' end
  return nil
end

-- The native import path: podium sends one MULTI/EXEC of
--   FCALL zadd_open; ZADD {tag}:zw score member ...; FCALL zadd_close
-- so Redis parses the batch as a native ZADD, with no Lua string made per
-- argument (which cost the script's `import` ~0.27 µs a member). The ZADD
-- writes ZW, never the board: zadd_open moves the board's set there when
-- the board takes the batch (O(1) RENAME) and zadd_close moves it back;
-- when it does not, ZW gets only the batch and zadd_close deletes it. So
-- the ZADD reaches the board only through a guard that checked it; if the
-- library were missing (neither guard runs), the batch lands in ZW alone,
-- which nothing reads and the next zadd_open or a `delete` drops. The
-- transaction is atomic, so both guards see the same board. Reply: 'ok',
-- or why not (zadd_refusal): podium then sends the batch another way.
function ops.zadd_open()
  redis.call('DEL', ZW)
  local why = zadd_refusal()
  if why then return why end
  if redis.call('EXISTS', Z) == 1 then redis.call('RENAME', Z, ZW) end
  return 'ok'
end

function ops.zadd_close()
  if zadd_refusal() then
    redis.call('DEL', ZW)
  elseif redis.call('EXISTS', ZW) == 1 then
    redis.call('RENAME', ZW, Z)
    whole()
  end
  return 1
end

-- A bulk load of plain `set`s that answers no ranks (`import`): ARGV:
-- score, member pairs, in ZADD's order. podium sends only entries that
-- cannot fail (valid member, no NaN), with no op but `set`, no
-- only/cond, no name or data, and whose id tokenises to itself, so the
-- member's sources are plain (plain_src) and need no `I` entry. The
-- board is checked once: its update is `set`, it has no bounds, no cap
-- and is not dense (what could refuse, block or evict an entry, or needs
-- per-entry bookkeeping); then the pairs go in by multi-member ZADDs. On
-- a board whose search sets exist (or are being built) the new members
-- are indexed as submit indexes them. Reply: the number of entries, or
-- {'no'}: podium sends the batch through `submit` instead.
function ops.import()
  local e = writable(); if e then return e end
  if not takes_imports() then return {'no'} end
  local n = (#ARGV - 1) / 2
  local fresh
  if cfg.ix ~= '0' then
    fresh = {}
    for a = 2, #ARGV, 2000 do
      local part = {}
      for k = a + 1, math.min(a + 1999, #ARGV), 2 do part[#part + 1] = ARGV[k] end
      local v = redis.call('ZMSCORE', Z, unpack(part))
      for k = 1, #v do if not v[k] then fresh[#fresh + 1] = part[k] end end
    end
  end
  for a = 2, #ARGV, 2000 do
    redis.call('ZADD', Z, unpack(ARGV, a, math.min(a + 1999, #ARGV)))
  end
  whole()
  if fresh then
    for _, m in ipairs(fresh) do reindex(m, plain_src(m), true) end
  end
  return n
end

-- ARGV: member, name, data, words (encoded as for submit; data '!' = not
-- an object).
function ops.set_data()
  local e = writable(); if e then return e end
  local m, name, data = ARGV[2], ARGV[3], ARGV[4]
  e = check_extra(name, data); if e then return e end
  if not mscore(m) then return 0 end
  set_extra(N, m, name)
  set_extra(D, m, data)
  reindex(m, sources(m, name, data, ARGV[5]), false)
  return 1
end

function ops.remove()
  local e = writable(); if e then return e end
  local mems = {}
  for i = 2, #ARGV do mems[#mems + 1] = ARGV[i] end
  return zrem(mems)
end

-- ARGV: start, stop (1-based, best first).
function ops.remove_ranks()
  local e = writable(); if e then return e end
  local total = redis.call('ZCARD', Z)
  local lo, hi = tonumber(ARGV[2]) - 1, math.min(tonumber(ARGV[3]), total)
  if lo >= hi then return 0 end
  return zrem(ids_of(zwindow(lo, hi - 1, false)))
end

-- Whether podium encoded a score range for this board's keys (ARGV[2]:
-- the keys' JSON, '' for a plain board): else it learns them and asks
-- again.
local function range_stale()
  if ARGV[2] ~= (cfg.sk or '') then return fail('stale') end
  return nil
end

-- Members of Z in a score range (ARGV[3], ARGV[4]): Redis score bounds,
-- or on a board with sort keys lex bounds on the first key's code.
local function in_range(withscores)
  if cfg.pl > 0 then return redis.call('ZRANGE', Z, ARGV[3], ARGV[4], 'BYLEX') end
  return redis.call('ZRANGE', Z, ARGV[3], ARGV[4], 'BYSCORE')
end

local function count_range()
  if cfg.pl > 0 then return redis.call('ZLEXCOUNT', Z, ARGV[3], ARGV[4]) end
  return redis.call('ZCOUNT', Z, ARGV[3], ARGV[4])
end

-- ARGV: keys, min, max (see range_stale, in_range).
function ops.remove_scores()
  local e = writable(); if e then return e end
  e = range_stale(); if e then return e end
  return zrem(ids_of(in_range()))
end

-- ARGV: the config hash's field/value pairs (`p`, the reset period, for
-- a board with a schedule).
function ops.create()
  if redis.call('EXISTS', C) == 1 then return fail('exists') end
  redis.call('HSET', C, unpack(ARGV, 2))
  -- Indexed on its first search (ops.index), as the engine does.
  redis.call('HSET', C, 'ix', '0')
  lifecycle('created')
  return 1
end

-- The reset schedule in a config JSON (nil if it cannot be read).
local function reset_of(json)
  if not json then return nil end
  local ok, v = pcall(cjson.decode, json)
  if ok and type(v) == 'table' then return v.reset end
  return nil
end

-- ARGV: as create's. A board that keeps its schedule keeps the period it
-- is in, so the next scheduled reset still archives that period; a new
-- schedule starts with the caller's `p`, the period of now (the period of
-- the schedule it replaces is not one of its own: archiving it would
-- empty the board at the next tick), and no schedule means no period.
local function put_fields(first)
  local existed = redis.call('EXISTS', C) == 1
  if existed and redis.call('HGET', C, 'ro') == '1' then return fail('ro') end
  local old = existed and load_cfg()
  local period = redis.call('HGET', C, 'p')
  local old_reset = reset_of(redis.call('HGET', C, 'json'))
  local ix = redis.call('HGET', C, 'ix')
  redis.call('DEL', C)
  redis.call('HSET', C, unpack(ARGV, first))
  if period and redis.call('HEXISTS', C, 'p') == 1
    and old_reset ~= nil and old_reset == reset_of(redis.call('HGET', C, 'json')) then
    redis.call('HSET', C, 'p', period)
  end
  -- The index state survives a reconfiguration (absent stays absent).
  if not existed then ix = '0' end
  if ix then redis.call('HSET', C, 'ix', ix) end
  cfg = load_cfg()
  rebuild_distinct()
  if old and table.concat(old.sf, ' ') ~= table.concat(cfg.sf, ' ') then
    -- Other fields: the next search builds their sets (a build in
    -- progress for the old ones is told to restart).
    drop_index(old.sf, old.ix)
    unindexed()
  end
  if not existed then lifecycle('created') end
  lifecycle('config', 'c', redis.call('HGET', C, 'json'))
  -- Another order, ranking or layout moves members with no write of
  -- theirs.
  if old and (old.asc ~= cfg.asc or old.ranking ~= cfg.ranking or old.sk ~= cfg.sk)
    and redis.call('ZCARD', Z) > 0 then
    whole()
  end
  evict()
  if existed then return 0 end
  return 1
end

-- The `sl` (stored layout of the keys) among config field/value pairs.
local function layout_in(first)
  for i = first, #ARGV, 2 do
    if ARGV[i] == 'sl' then return ARGV[i + 1] end
  end
  return ''
end

-- ARGV: the config's field/value pairs. The members' bytes must already
-- be in the new config's layout: a config whose `sl` differs from the
-- stored one on a board with members needs a re-sort (resort_begin), so
-- the script answers 'stale' (podium read another config meanwhile).
function ops.put()
  cfg = load_cfg()
  if cfg then
    if resort_busy() then return fail('resorting') end
    if (redis.call('HGET', C, 'sl') or '') ~= layout_in(2) and redis.call('ZCARD', Z) > 0 then
      return fail('stale')
    end
  end
  return put_fields(2)
end

-- Re-sort, step 1 (a config whose keys are stored otherwise: podium
-- re-encodes every member from its stored values, in chunks, into RZ and
-- RT while the board's writes wait; reads go on from Z). ARGV: token,
-- the layout podium read (`sl`, '' plain), lease in ms. Reply: members.
function ops.resort_begin()
  local e = writable(); if e then return e end
  if (redis.call('HGET', C, 'sl') or '') ~= ARGV[3] then return fail('stale') end
  redis.call('DEL', RZ, RT)
  local n = redis.call('ZCARD', Z)
  redis.call('HSET', C, 'rs', ARGV[2] .. ' ' .. (now_ms() + tonumber(ARGV[4])) .. ' 0 ' .. n)
  return n
end

-- The caller's re-sort still holds the board.
local function resort_mine()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  local tok = cfg.rs and string.match(cfg.rs, '^(%S+)')
  if tok ~= ARGV[2] then return fail('resortlost') end
  return nil
end

-- Re-sort, step 2, repeated: writes the members podium re-encoded and
-- reads the next ones, best first. ARGV: token, lease in ms, members
-- done, first and last position to read (first > last: none), then per
-- member: id, member of RZ, its score there, its codes ('' on a board
-- without sort keys). Reply: the positions' {member, score, ...}.
function ops.resort_step()
  local e = resort_mine(); if e then return e end
  local total = redis.call('ZCARD', Z)
  redis.call('HSET', C, 'rs', ARGV[2] .. ' ' .. (now_ms() + tonumber(ARGV[3])) .. ' ' .. ARGV[4] .. ' ' .. total)
  local zs, ts = {}, {}
  for i = 7, #ARGV, 4 do
    zs[#zs + 1] = ARGV[i + 2]
    zs[#zs + 1] = ARGV[i + 1]
    if ARGV[i + 3] ~= '' then
      ts[#ts + 1] = ARGV[i]
      ts[#ts + 1] = ARGV[i + 3]
    end
  end
  for a = 1, #zs, 1000 do redis.call('ZADD', RZ, unpack(zs, a, math.min(a + 999, #zs))) end
  for a = 1, #ts, 1000 do redis.call('HSET', RT, unpack(ts, a, math.min(a + 999, #ts))) end
  local from, to = tonumber(ARGV[5]), tonumber(ARGV[6])
  if from > to then return {} end
  return zwindow(from, to, true)
end

-- Re-sort, step 3: the new members replace the old and the config is
-- put (as ops.put). ARGV: token, the config's field/value pairs.
function ops.resort_finish()
  local e = resort_mine(); if e then return e end
  for _, p in ipairs({{RZ, Z}, {RT, T}}) do
    if redis.call('EXISTS', p[1]) == 1 then
      redis.call('RENAME', p[1], p[2])
    else
      redis.call('DEL', p[2])
    end
  end
  whole()
  return put_fields(3)
end

-- A re-sort refused (a value that does not fit its new key): the board
-- stays as it was. ARGV: token.
function ops.resort_abort()
  local e = resort_mine(); if e then return e end
  redis.call('HDEL', C, 'rs')
  redis.call('DEL', RZ, RT)
  return 1
end

-- A re-sort's progress: {done, total}, or {} when none runs.
function ops.resort_info()
  local v = redis.call('HMGET', C, 'json', 'rs')
  if not v[1] then return fail('noboard') end
  if not v[2] then return {} end
  local deadline, done, total = string.match(v[2], '^%S+ (%d+) (%d+) (%d+)')
  if not deadline or tonumber(deadline) <= now_ms() then return {} end
  return {tonumber(done), tonumber(total)}
end

function ops.delete()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  drop_index(cfg.sf, cfg.ix)
  -- UNLINK: a board of millions is freed by Redis's background thread,
  -- not inside this script, which would stall every client meanwhile.
  redis.call('UNLINK', C, Z, N, D, U, K, SZ, SN, SD, I, SI, SC, ZW, T, ST, RZ, RT)
  lifecycle('deleted')
  return 1
end

-- {config json, read-only, members, bytes, reset period or nil}
function ops.info()
  local v = redis.call('HMGET', C, 'json', 'ro', 'p')
  if not v[1] then return fail('noboard') end
  local bytes = 0
  for _, k in ipairs({C, Z, N, D, U, K, I, T}) do
    bytes = bytes + (redis.call('MEMORY', 'USAGE', k) or 0)
  end
  local ro = 0
  if v[2] == '1' then ro = 1 end
  return {v[1], ro, redis.call('ZCARD', Z), bytes, v[3]}
end

-- ARGV: first, last (0-based best-first positions; -1 = the end), with_data.
function ops.window()
  local e = viewable(); if e then return e end
  local last = tonumber(ARGV[3])
  if last < 0 then last = redis.call('ZCARD', Z) - 1 end
  return window(tonumber(ARGV[2]), last, ARGV[4] == '1')
end

-- ARGV: start, stop (1-based), from_worst, with_data. The reply is best
-- first; the caller reverses it for from_worst.
function ops.rank_range()
  local e = viewable(); if e then return e end
  local total = redis.call('ZCARD', Z)
  local lo, hi = tonumber(ARGV[2]) - 1, math.min(tonumber(ARGV[3]), total)
  local wd = ARGV[5] == '1'
  if lo >= hi then return window(0, -1, wd) end
  if ARGV[4] == '1' then return window(total - hi, total - 1 - lo, wd) end
  return window(lo, hi - 1, wd)
end

-- The members better than a score range, which place it: those above its
-- max on a desc board, below its min on an asc one (bounds in Redis form).
local function better_than_range(min, max)
  if cfg.pl > 0 then
    -- Lex bounds: '[' and the least code, '(' and the code past the
    -- greatest (or '+').
    if cfg.asc then return redis.call('ZLEXCOUNT', Z, '-', '(' .. string.sub(min, 2)) end
    if max == '+' then return 0 end
    return redis.call('ZLEXCOUNT', Z, '[' .. string.sub(max, 2), '+')
  end
  if cfg.asc then
    if string.sub(min, 1, 1) == '(' then return redis.call('ZCOUNT', Z, '-inf', string.sub(min, 2)) end
    return redis.call('ZCOUNT', Z, '-inf', '(' .. min)
  end
  if string.sub(max, 1, 1) == '(' then return redis.call('ZCOUNT', Z, string.sub(max, 2), '+inf') end
  return redis.call('ZCOUNT', Z, '(' .. max, '+inf')
end

-- ARGV: keys, min, max (see range_stale), offset, limit, from_worst,
-- with_data.
function ops.score_range()
  local e = viewable(); if e then return e end
  e = range_stale(); if e then return e end
  local wd = ARGV[8] == '1'
  local lo = better_than_range(ARGV[3], ARGV[4])
  local n = count_range()
  local off, lim = tonumber(ARGV[5]), tonumber(ARGV[6])
  if off >= n then return window(0, -1, wd) end
  local take = math.min(lim, n - off)
  if ARGV[7] == '1' then return window(lo + n - off - take, lo + n - off - 1, wd) end
  return window(lo + off, lo + off + take - 1, wd)
end

-- ARGV: member, page size, with_data. A window plus the member's position
-- and better-than count, or nil for a missing member.
function ops.around()
  local e = viewable(); if e then return e end
  local m = ARGV[2]
  local p = pos_of(m)
  if not p then return false end
  local ps = tonumber(ARGV[3])
  local a = p - math.floor(ps / 2)
  if a < 0 then a = 0 end
  local w = window(a, a + ps - 1, ARGV[4] == '1')
  w[8] = p
  w[9] = rank_better(mscore(m))
  return w
end

-- {position, score, better members, total, name, data, ranking, rank
-- count}, or nil.
function ops.entry()
  local e = viewable(); if e then return e end
  local m = ARGV[2]
  local sc = mscore(m)
  if not sc then return false end
  return {pos_of(m), sc, better(sc), redis.call('ZCARD', Z),
          redis.call('HGET', N, m), redis.call('HGET', D, m), cfg.rk, rank_better(sc)}
end

-- {ranking, {member[, position, score, better, name, data]}...} of
-- `mems` (from index `from` on).
local function ranks_of(mems, from, wd)
  local out = {cfg.rk}
  for i = from, #mems do
    local m = mems[i]
    local sc = mscore(m)
    if sc then
      local data = false
      if wd then data = redis.call('HGET', D, m) end
      out[#out + 1] = {m, pos_of(m), sc, rank_better(sc), redis.call('HGET', N, m), data}
    else
      out[#out + 1] = {m}
    end
  end
  return out
end

-- ARGV: with_data, members... Reply: ranks_of's.
function ops.ranks()
  local e = viewable(); if e then return e end
  return ranks_of(ARGV, 3, ARGV[2] == '1')
end

-- A podium node's read of the board's live events and of the state they
-- are told from, in one run so the state is the board's right after the
-- last entry read. ARGV: the stream id read up to ('$': none yet, start
-- from now), the most entries to read, the top places to read, whether to
-- read the members the entries name ('1'), then the watched members.
-- Reply: {the stream id now read up to ('0-0': no stream), lost (1:
-- entries after the id given were trimmed, the stream was recreated, or
-- more than the most were waiting: none are returned), Redis's time in
-- ms (below every entry still to come, for a board without a stream),
-- the entries, then when the board exists the top places (window's) and
-- ranks_of the watched and named members}. An entry is read inclusively from the id given, so that the
-- entry being there proves nothing after it was trimmed.
function ops.events()
  local after, most, top = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
  local last, lost, entries = '0-0', 0, {}
  if redis.call('EXISTS', E) == 1 then
    local x = redis.call('XINFO', 'STREAM', E)
    for i = 1, #x, 2 do
      if x[i] == 'last-generated-id' then last = x[i + 1] end
    end
    if after ~= '$' and after ~= last then
      entries = redis.call('XRANGE', E, after, '+', 'COUNT', most + 1)
      if entries[1] and entries[1][1] == after then
        table.remove(entries, 1)
      elseif after ~= '0-0' then
        lost = 1
      end
      if #entries > most then lost = 1 end
    end
  elseif after ~= '$' and after ~= '0-0' then
    lost = 1
  end
  if lost == 1 then entries = {} end
  local out = {last, lost, now_ms(), entries}
  if viewable() then return out end
  local a, b = 0, top - 1
  if top == 0 then a, b = 1, 0 end
  out[5] = window(a, b, false)
  local ms, seen = {}, {}
  for i = 6, #ARGV do
    if not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      ms[#ms + 1] = ARGV[i]
    end
  end
  if ARGV[5] == '1' then
    for _, en in ipairs(entries) do
      local f = en[2]
      for j = 1, #f - 1, 2 do
        if f[j] == 'm' and not seen[f[j + 1]] then
          seen[f[j + 1]] = true
          ms[#ms + 1] = f[j + 1]
        end
      end
    end
  end
  out[6] = ranks_of(ms, 1, false)
  return out
end

-- ARGV: p. The entry at clamp(floor(n + 1 - p*n/100), 1, n), as the
-- engine picks it.
function ops.score_at()
  local e = viewable(); if e then return e end
  local n = redis.call('ZCARD', Z)
  if n == 0 then return window(0, -1, false) end
  local p = tonumber(ARGV[2])
  local r = math.floor(n + 1 - p * n / 100)
  if r < 1 then r = 1 end
  if r > n then r = n end
  return window(r - 1, r - 1, false)
end

-- ARGV: keys, min, max (see range_stale).
function ops.count()
  local e = viewable(); if e then return e end
  e = range_stale(); if e then return e end
  return count_range()
end

-- ARGV: member, score, id words triples. Replaces the content wholesale,
-- names and data included (merge/intersect results carry scores only), so
-- the members are searchable by their ids.
function ops.replace()
  local e = writable(); if e then return e end
  if cfg.pl > 0 then return fail('combsort') end
  drop_index(cfg.sf, cfg.ix)
  redis.call('UNLINK', Z, N, D, I)
  unindexed()
  for i = 2, #ARGV, 3000 do
    local args = {'ZADD', Z}
    for j = i, math.min(i + 2999, #ARGV), 3 do
      args[#args + 1] = ARGV[j + 1]
      args[#args + 1] = ARGV[j]
    end
    redis.call(unpack(args))
  end
  for j = 2, #ARGV, 3 do reindex(ARGV[j], ARGV[j + 2] .. '\n-', true) end
  rebuild_distinct()
  whole()
  return evict()
end

-- reset, step 1: moves the content to the staging keys in one step, so
-- every write lands wholly before (archived) or after (live board) it,
-- and moves the board to its next period in the same step, so a period is
-- archived once however many nodes ask at the same time. ARGV: the config
-- JSON and the period ('' = none) the caller saw and computed from, the
-- label when the board has no period, the period to enter ('' = none).
-- Reply: {'stale'} when the config or the period moved meanwhile (another
-- node's reset, a reconfiguration), else {members archived, the archive's
-- label, config field, value, ...} (the period left out: an archive has
-- none). The label and fields are also kept in SC until `unstage`, so
-- that a reset that stopped half-way (podium crashed or lost Redis
-- during the copy) can be finished: while staging keys exist, take
-- answers {'unfinished', staged members, label, archive name ('' = not
-- chosen yet), config field, value, ...} and changes nothing; podium
-- finishes that reset (the copy is idempotent) and asks again.
function ops.take()
  local e = writable(); if e then return e end
  if redis.call('EXISTS', SZ, SN, SD, SI, ST) > 0 then
    -- Left by a reset from before SC was kept: nothing says how to finish.
    if redis.call('EXISTS', SC) == 0 then return fail('staging') end
    local st = redis.call('HGETALL', SC)
    local label, archive, out = '', '', {}
    for i = 1, #st, 2 do
      local f = st[i]
      if f == 'label' then
        label = st[i + 1]
      elseif f == 'archive' then
        archive = st[i + 1]
      elseif string.sub(f, 1, 2) == 'c:' then
        out[#out + 1] = string.sub(f, 3)
        out[#out + 1] = st[i + 1]
      end
    end
    local head = {'unfinished', redis.call('ZCARD', SZ), label, archive}
    for _, x in ipairs(out) do head[#head + 1] = x end
    return head
  end
  local v = redis.call('HMGET', C, 'json', 'p')
  if v[1] ~= ARGV[2] or (v[2] or '') ~= ARGV[3] then return {'stale'} end
  local label = v[2] or ARGV[4]
  if ARGV[5] ~= '' then redis.call('HSET', C, 'p', ARGV[5]) end
  local n = redis.call('ZCARD', Z)
  drop_index(cfg.sf, cfg.ix)
  for _, p in ipairs({{Z, SZ}, {N, SN}, {D, SD}, {I, SI}, {T, ST}}) do
    if redis.call('EXISTS', p[1]) == 1 then redis.call('RENAME', p[1], p[2]) end
  end
  redis.call('DEL', U, K)
  unindexed()
  local out = {n, label}
  redis.call('DEL', SC)
  redis.call('HSET', SC, 'label', label)
  local fields = redis.call('HGETALL', C)
  for i = 1, #fields, 2 do
    if fields[i] ~= 'p' and fields[i] ~= 'ix' then
      out[#out + 1] = fields[i]
      out[#out + 1] = fields[i + 1]
      redis.call('HSET', SC, 'c:' .. fields[i], fields[i + 1])
    end
  end
  return out
end

-- reset, between steps 1 and 2: records the archive's name and sequence
-- number among the board's archives, unless they were recorded first (by
-- another node finishing the same reset), so every node finishing it
-- copies into one archive, numbered once. ARGV: the name, the number.
-- Reply: {the recorded name, 1 if this call recorded it, the recorded
-- number}, or nil when the reset was finished meanwhile. The node that
-- recorded it reports the archive, so a reset two nodes finish is
-- reported once. (A reset staged before archives were numbered has a
-- name and no number: it gets the caller's.)
function ops.name()
  if redis.call('EXISTS', SC) == 0 then return false end
  local set = redis.call('HSETNX', SC, 'archive', ARGV[2])
  redis.call('HSETNX', SC, 'seq', ARGV[3])
  -- The board was emptied by `take`; its reset is told once, by the call
  -- that names the archive, so the event carries the name.
  if set == 1 then lifecycle('reset', 'a', ARGV[2]) end
  return {redis.call('HGET', SC, 'archive'), set, tonumber(redis.call('HGET', SC, 'seq'))}
end

-- A scheduled board without a period enters the caller's (ARGV: config
-- JSON seen, period), unless it was reconfigured or got one meanwhile.
function ops.period()
  local e = writable(); if e then return e end
  if redis.call('HGET', C, 'json') == ARGV[2] then redis.call('HSETNX', C, 'p', ARGV[3]) end
  return 1
end

-- reset, step 2: a chunk of the staged content, best first. ARGV: first,
-- last. Reply: {{member, score, ...}, names, data, search sources}.
function ops.staged()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  local args = {'ZRANGE', SZ, tonumber(ARGV[2]), tonumber(ARGV[3])}
  if not cfg.asc then args[#args + 1] = 'REV' end
  args[#args + 1] = 'WITHSCORES'
  local ms = redis.call(unpack(args))
  local mems = {}
  for i = 1, #ms, 2 do mems[#mems + 1] = ms[i] end
  -- On a board with sort keys the members carry their codes, which the
  -- archive (of the same keys) takes as they are.
  ids_of(mems)
  return {ms, hmget(SN, mems), hmget(SD, mems), hmget(SI, mems)}
end

-- reset, step 3 (on the archive, which is read-only from its creation):
-- adds entries; adding one again changes nothing. ARGV: member, score, name, data, search sources
-- quintuples ('' = none).
function ops.load()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  for i = 2, #ARGV, 5 do
    local m, sc, name, data, src = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
    local before
    if cfg.pl > 0 then
      -- The staged member is codes then id.
      local e = m
      m = idof(e)
      local c = codes_of(e)
      before = redis.call('HGET', T, m)
      if before then
        redis.call('ZREM', Z, before .. m)
        dist_del(before)
      end
      redis.call('ZADD', Z, sc, e)
      redis.call('HSET', T, m, c)
      dist_add(c)
    else
      -- A finished reset copies again what a stopped one had copied.
      before = redis.call('ZSCORE', Z, m)
      if before then dist_del(before) end
      redis.call('ZADD', Z, sc, m)
      dist_add(redis.call('ZSCORE', Z, m))
    end
    if name ~= '' then redis.call('HSET', N, m, name) end
    if data ~= '' then redis.call('HSET', D, m, data) end
    -- No staged sources: the member's are plain (see plain_src), which
    -- an unindexed archive need not store; one searched (hence indexed)
    -- during the copy indexes the member.
    if src == '' then src = plain_src(m) end
    reindex(m, src, not before)
  end
  whole()
  return 1
end

-- reset, step 4: drops the staging keys once the archive holds them.
function ops.unstage()
  redis.call('DEL', SZ, SN, SD, SI, SC, ST)
  return 1
end

-- Builds the prefix and word sets of a board, a chunk of members per
-- call, on its first search (podium calls it when `search` answers
-- `unindexed`). ARGV: token (the caller's, random), cursor ('0' to
-- start), chunk size. The first chunk turns ix from '0' to 'b<token>';
-- from then on every write keeps the sets of the members it touches in
-- full (see reindex), and each chunk writes the sets of the members a
-- ZSCAN step of Z returns, from their sources in I or, when absent, their
-- plain ones: a ZSCAN returns every member present from its first call to
-- its last at least once, and a member added, changed or removed
-- meanwhile had its sets written by that write, so when the scan ends
-- every member is indexed and ix becomes '1'. Writing a
-- member's sets twice writes the same counts, so a caller that starts
-- while another builds joins its token and scans on its own; the first
-- to finish marks the index built. A change of search_fields during a
-- build (ix back to '0', or another token) makes the next chunk answer
-- 'restart': the caller starts again from cursor '0'.
-- Reply: {'done'}, {'more', cursor, token} or {'restart'}.
function ops.index()
  local e = readable(); if e then return e end
  local tok, cur = ARGV[2], ARGV[3]
  if cfg.ix == '1' then return {'done'} end
  if cfg.ix == '0' then
    if cur ~= '0' then return {'restart'} end
    tok = 'b' .. tok
    redis.call('HSET', C, 'ix', tok)
  elseif cfg.ix ~= tok then
    if cur ~= '0' then return {'restart'} end
    tok = cfg.ix
  end
  if #cfg.sf > 0 then
    local r = redis.call('ZSCAN', Z, cur, 'COUNT', tonumber(ARGV[4]))
    local kv, ms = r[2], {}
    for i = 1, #kv, 2 do ms[#ms + 1] = kv[i] end
    ids_of(ms)
    local src = hmget(I, ms)
    for i, m in ipairs(ms) do
      for k, c in pairs(prefix_keys(record(src[i] or plain_src(m), cfg.sf), {})) do redis.call('ZADD', k, c, m) end
    end
    cur = r[1]
  else
    cur = '0'
  end
  if cur == '0' then
    redis.call('HSET', C, 'ix', '1')
    return {'done'}
  end
  return {'more', cur, tok}
end

-- The search reply: total, ranking, then each page member's entry.
local function search_reply(total, page, wd)
  local out = {total, cfg.rk}
  for _, m in ipairs(page) do
    local sc = mscore(m)
    local data = false
    if wd then data = redis.call('HGET', D, m) end
    out[#out + 1] = {m, pos_of(m), sc, rank_better(sc), redis.call('HGET', N, m), data}
  end
  return out
end

-- Whether every word a query token `t` matches is also matched by query
-- key `u` (both {w, p}): a prefix holds its longer prefixes and the words
-- it starts; an exact word holds only itself.
local function within(t, u)
  if u.p then return string.sub(t.w, 1, #u.w) == u.w end
  return (not t.p) and t.w == u.w
end

-- ARGV: the search fields the query was parsed for, offset, limit,
-- with_data, verify, then per query word: word, prefix (1/0), field (its
-- 0-based index, -1 = any). Reply: {'stale'} when the search fields
-- changed since, else {total, ranking, {member, position, score, better,
-- name, data}...}.
--
-- The words each query word matches form a laminar family: two prefixes
-- either nest or share no word, and an exact word is inside a prefix
-- that starts it or apart from it. For such a family a distinct word for
-- each query word exists (Hall's condition) exactly when, for each
-- query key u (a prefix or exact set), the member has at least as many
-- words in u as there are query words whose words all lie in u. A
-- member's score in a set is that count, so the members answering are
-- the intersection, with Z, of each key's members scoring at least its
-- need: a key needed once is used as it is, one needed more often is
-- first cut to its members scoring that much (ZRANGESTORE … BYSCORE into
-- a scratch key `{tag}:q:<i>`, dropped before the script returns). No
-- candidate is read or checked. Only a `field:` restriction on a board
-- with several search fields breaks the family (`team:al` and `ali`
-- overlap without nesting); then (`verify`) the same intersection is a
-- superset, each candidate's words are matched (Kuhn's augmenting paths)
-- in board order, and the total counts every match.
function ops.search()
  local e = readable(); if e then return e end
  if table.concat(cfg.sf, ' ') ~= ARGV[2] then return {'stale'} end
  if cfg.ix ~= '1' then return {'unindexed'} end
  local off, lim = tonumber(ARGV[3]), tonumber(ARGV[4])
  local wd, verify = ARGV[5] == '1', ARGV[6] == '1'
  local toks, us, seen = {}, {}, {}
  for i = 7, #ARGV, 3 do
    local t = {w = ARGV[i], p = ARGV[i + 1] == '1', f = tonumber(ARGV[i + 2]) + 1}
    toks[#toks + 1] = t
    local k = (t.p and WBASE or XBASE) .. t.w
    if not seen[k] then
      seen[k] = true
      us[#us + 1] = {w = t.w, p = t.p, k = k}
    end
  end
  local keys, scratch = {}, {}
  local QBASE = string.sub(C, 1, #C - 1) .. 'q:'
  for i, u in ipairs(us) do
    local need = 0
    for _, t in ipairs(toks) do
      if within(t, u) then need = need + 1 end
    end
    if need > 1 then
      local q = QBASE .. i
      scratch[#scratch + 1] = q
      redis.call('ZRANGESTORE', q, u.k, need, '+inf', 'BYSCORE')
      keys[#keys + 1] = q
    else
      keys[#keys + 1] = u.k
    end
  end
  local function done(total, page)
    if #scratch > 0 then redis.call('DEL', unpack(scratch)) end
    return search_reply(total, page, wd)
  end
  if not verify then
    -- The sets alone hold the answer (they hold only members of the
    -- board), so the total is a count, and a page of frequent words is
    -- found sooner by walking the board from the best (each entry tested
    -- against the sets, ~(offset+limit)·n/total entries) than by sorting
    -- every match; the walk costs a Lua call per entry, so about three
    -- times an intersected match.
    local total
    if #keys == 1 then
      total = redis.call('ZCARD', keys[1])
    else
      total = redis.call('ZINTERCARD', #keys, unpack(keys))
    end
    local n = redis.call('ZCARD', Z)
    if off < total and lim > 0 and 3 * (off + lim) * n < total * total then
      local page, seen_, pos = {}, 0, 0
      while #page < lim and pos < n do
        for _, m in ipairs(ids_of(zwindow(pos, pos + 255, false))) do
          local hit = true
          for _, k in ipairs(keys) do
            if not redis.call('ZSCORE', k, m) then
              hit = false
              break
            end
          end
          if hit then
            if seen_ >= off then page[#page + 1] = m end
            seen_ = seen_ + 1
            if #page >= lim then break end
          end
        end
        pos = pos + 256
      end
      return done(total, page)
    end
  end
  local res
  if cfg.pl > 0 then
    -- Z's members are not ids here: the matches are put in board order
    -- by their codes, sorted by Redis (by bytes) in a scratch set.
    local ids
    if #keys == 1 then
      ids = redis.call('ZRANGE', keys[1], 0, -1)
    else
      ids = redis.call('ZINTER', #keys, unpack(keys))
    end
    local cs = hmget(T, ids)
    local q = QBASE .. 'o'
    scratch[#scratch + 1] = q
    local args = {}
    for i, m in ipairs(ids) do
      if cs[i] then
        args[#args + 1] = 0
        args[#args + 1] = cs[i] .. m
      end
    end
    for a = 1, #args, 1000 do
      redis.call('ZADD', q, unpack(args, a, math.min(a + 999, #args)))
    end
    res = ids_of(redis.call('ZRANGE', q, 0, -1))
  else
    local args = {'ZINTER', #keys + 1, Z}
    for _, k in ipairs(keys) do args[#args + 1] = k end
    args[#args + 1] = 'WEIGHTS'
    args[#args + 1] = 1
    for _ = 1, #keys do args[#args + 1] = 0 end
    res = redis.call(unpack(args))
  end
  local n = #res
  -- ZINTER is ascending (score, member): an asc board's order; a desc
  -- board's is the exact reverse.
  local function at(j)
    if cfg.asc then return res[j] end
    return res[n + 1 - j]
  end
  local total, page = 0, {}
  if verify then
    for j = 1, n do
      local m = at(j)
      if matches(toks, record(src_of(m), cfg.sf)) then
        if total >= off and #page < lim then page[#page + 1] = m end
        total = total + 1
      end
    end
  else
    total = n
    for j = off + 1, math.min(n, off + lim) do page[#page + 1] = at(j) end
  end
  return done(total, page)
end

-- The operations that only read, callable through FN_RO (flag
-- `no-writes`: Redis runs them under maxmemory and on replicas, as it
-- runs plain reads). `search` and `index` write (scratch sets, the
-- index), so they are not among them.
local READS = {
  info = true, window = true, rank_range = true, score_range = true, around = true,
  entry = true, ranks = true, score_at = true, count = true, staged = true,
  resort_info = true, events = true,
}

local function run(keys, args)
  ARGV, cfg = args, nil
  C = keys[1]
  local base = string.sub(C, 1, #C - 1)
  Z, N, D, U, K = base .. 'z', base .. 'n', base .. 'd', base .. 'u', base .. 'k'
  T, ST, RZ, RT = base .. 't', base .. 'st', base .. 'rz', base .. 'rt'
  SZ, SN, SD = base .. 'sz', base .. 'sn', base .. 'sd'
  I, SI, SC = base .. 'i', base .. 'si', base .. 'sc'
  ZW = base .. 'zw'
  WBASE, XBASE = base .. 'w:', base .. 'x:'
  E, L = base .. 'ev', base .. 'el'
  local f = ops[args[1]]
  if not f then return fail('op', args[1]) end
  LISTENED = not READS[args[1]] and redis.call('EXISTS', L) == 1
  if not LISTENED then return f() end
  TOUCHED, WHOLE, LIFE = {}, false, {}
  local r = f()
  emit()
  return r
end

redis.register_function(FN_RW, run)
redis.register_function{
  function_name = FN_RO,
  flags = {'no-writes'},
  callback = function(keys, args)
    if not READS[args[1]] then return fail('op', args[1]) end
    return run(keys, args)
  end,
}
