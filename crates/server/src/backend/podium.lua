-- podium's board operations on Redis (docs/redis-backend.md). One script,
-- loaded once and called by SHA: every compound operation runs in it, so it
-- is atomic on a single Redis and on a cluster node alike (all KEYS share
-- the board's hash tag, hence one slot).
--
-- KEYS: 1 config hash, 2 scores zset, 3 names hash, 4 data hash, 5 distinct
-- scores zset and 6 their multiplicities (kept on dense boards only), 7-9
-- the staging copies of 2-4 while a reset archives the board.
-- ARGV[1] names the operation; the rest are its arguments.
--
-- Scores cross the boundary only as strings: Lua would print a number with
-- 14 digits, so a computed score is never written back from Lua; ZADD gets
-- the caller's string and ZINCRBY does its own (IEEE) addition.
-- Errors are `PODIUM <kind> <args>` replies that the Rust side turns into
-- the engine's own errors (same codes, same messages).

local C, Z, N, D, U, K = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local SZ, SN, SD = KEYS[7], KEYS[8], KEYS[9]
local OP = ARGV[1]
local MAX_MEMBER, MAX_NAME = 512, 512
local cfg

local function fail(...)
  return redis.error_reply('PODIUM ' .. table.concat({...}, ' '))
end

local function load_cfg()
  local v = redis.call('HMGET', C, 'order', 'ranking', 'update', 'min', 'max', 'cap', 'maxdata', 'ro')
  if not v[1] then return nil end
  return {
    asc = v[1] == 'asc', ranking = v[2], update = v[3],
    minstr = v[4] or '-inf', maxstr = v[5] or 'inf',
    min = tonumber(v[4] or '-inf'), max = tonumber(v[5] or 'inf'),
    cap = v[6] and tonumber(v[6]), maxdata = tonumber(v[7]), ro = v[8] == '1',
  }
end

-- Best-first position (0-based) of a member, or false.
local function pos_of(m)
  if cfg.asc then return redis.call('ZRANK', Z, m) end
  return redis.call('ZREVRANK', Z, m)
end

-- How many entries of `key` have a strictly better score than the score
-- string s.
local function better_in(key, s)
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
  if tonumber(s) == 0 then return '0' end
  return s
end

local function dist_add(s)
  if cfg.ranking ~= 'dense' then return end
  local k = dkey(s)
  if redis.call('HINCRBY', K, k, 1) == 1 then redis.call('ZADD', U, k, k) end
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
    local ms = redis.call('ZRANGE', Z, a, a + 999, 'WITHSCORES')
    for i = 2, #ms, 2 do dist_add(ms[i]) end
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
  local out = {}
  chunks(mems, function(part)
    local v = redis.call('HMGET', key, unpack(part))
    for k = 1, #v do out[#out + 1] = v[k] end
  end)
  return out
end

-- Names and data of members that left the board.
local function forget(mems)
  chunks(mems, function(part)
    redis.call('HDEL', N, unpack(part))
    redis.call('HDEL', D, unpack(part))
  end)
end

local function zrem(mems)
  local n = 0
  if cfg.ranking == 'dense' then
    -- One by one: each removed score leaves the distinct set once, even
    -- when a member is listed twice.
    for _, m in ipairs(mems) do
      local sc = redis.call('ZSCORE', Z, m)
      if sc then
        redis.call('ZREM', Z, m)
        dist_del(sc)
        n = n + 1
      end
    end
    forget(mems)
    return n
  end
  chunks(mems, function(part) n = n + redis.call('ZREM', Z, unpack(part)) end)
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

-- A page of the board: {total, first position, {member, score, ...},
-- better-than count of the first score, names, data, ranking}.
local function window(a, b, with_data)
  local total = redis.call('ZCARD', Z)
  if a < 0 then a = 0 end
  if b > total - 1 then b = total - 1 end
  if a > b then return {total, a, {}, 0, {}, {}, cfg.ranking} end
  local ms = zwindow(a, b, true)
  local mems = {}
  for i = 1, #ms, 2 do mems[#mems + 1] = ms[i] end
  local data = {}
  if with_data then data = hmget(D, mems) end
  return {total, a, ms, rank_better(ms[2]), hmget(N, mems), data, cfg.ranking}
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
    mems[#mems + 1] = popped[i]
    dist_del(popped[i + 1])
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
  if data ~= '-' and #data - 1 > cfg.maxdata then return fail('data', cfg.maxdata) end
  return nil
end

local function writable()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  if cfg.ro then return fail('ro') end
  return nil
end

local function readable()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  return nil
end

local ops = {}

-- ARGV: n, then per entry: member, score, op ('' = the board's), presence
-- (a/n/e), cond (a/g/l), name, data. Reply: {ranking, item...}.
function ops.submit()
  local e = writable(); if e then return e end
  local n = tonumber(ARGV[2])
  -- Input errors refuse the whole batch before anything is applied.
  for i = 0, n - 1 do
    local b = 3 + i * 7
    local m, s, op, name, data = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 5], ARGV[b + 6]
    if #m == 0 or #m > MAX_MEMBER then return fail('member', #m) end
    local x = tonumber(s)
    if x ~= x then return fail('nan') end
    e = check_extra(name, data); if e then return e end
    if op == '' then op = cfg.update end
    if op ~= 'incr' and not in_bounds(x) then return fail('oob', s, '-', cfg.minstr, cfg.maxstr) end
  end
  local out = {cfg.ranking}
  for i = 0, n - 1 do
    local b = 3 + i * 7
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
        set_extra(N, m, name)
        set_extra(D, m, data)
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
          if changed then dist_add(cur) end
          out[#out + 1] = {'upd', sc, pos_of(m), rank_better(cur), olds, blocked and 0 or 1, changed and 1 or 0}
        end
      end
    end
  end
  return out
end

-- ARGV: member, name, data (encoded as for submit; data '!' = not an object).
function ops.set_data()
  local e = writable(); if e then return e end
  local m, name, data = ARGV[2], ARGV[3], ARGV[4]
  e = check_extra(name, data); if e then return e end
  if not redis.call('ZSCORE', Z, m) then return 0 end
  set_extra(N, m, name)
  set_extra(D, m, data)
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
  return zrem(zwindow(lo, hi - 1, false))
end

-- ARGV: min, max (Redis score bounds).
function ops.remove_scores()
  local e = writable(); if e then return e end
  return zrem(redis.call('ZRANGE', Z, ARGV[2], ARGV[3], 'BYSCORE'))
end

-- ARGV: the config hash's field/value pairs.
function ops.create()
  if redis.call('EXISTS', C) == 1 then return fail('exists') end
  redis.call('HSET', C, unpack(ARGV, 2))
  return 1
end

function ops.put()
  local existed = redis.call('EXISTS', C) == 1
  if existed and redis.call('HGET', C, 'ro') == '1' then return fail('ro') end
  redis.call('DEL', C)
  redis.call('HSET', C, unpack(ARGV, 2))
  cfg = load_cfg()
  rebuild_distinct()
  evict()
  if existed then return 0 end
  return 1
end

function ops.delete()
  if redis.call('EXISTS', C) == 0 then return fail('noboard') end
  redis.call('DEL', C, Z, N, D, U, K, SZ, SN, SD)
  return 1
end

-- {config json, read-only, members, bytes}
function ops.info()
  local v = redis.call('HMGET', C, 'json', 'ro')
  if not v[1] then return fail('noboard') end
  local bytes = 0
  for _, k in ipairs({C, Z, N, D, U, K}) do
    bytes = bytes + (redis.call('MEMORY', 'USAGE', k) or 0)
  end
  local ro = 0
  if v[2] == '1' then ro = 1 end
  return {v[1], ro, redis.call('ZCARD', Z), bytes}
end

-- ARGV: first, last (0-based best-first positions; -1 = the end), with_data.
function ops.window()
  local e = readable(); if e then return e end
  local last = tonumber(ARGV[3])
  if last < 0 then last = redis.call('ZCARD', Z) - 1 end
  return window(tonumber(ARGV[2]), last, ARGV[4] == '1')
end

-- ARGV: start, stop (1-based), from_worst, with_data. The reply is best
-- first; the caller reverses it for from_worst.
function ops.rank_range()
  local e = readable(); if e then return e end
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
  if cfg.asc then
    if string.sub(min, 1, 1) == '(' then return redis.call('ZCOUNT', Z, '-inf', string.sub(min, 2)) end
    return redis.call('ZCOUNT', Z, '-inf', '(' .. min)
  end
  if string.sub(max, 1, 1) == '(' then return redis.call('ZCOUNT', Z, string.sub(max, 2), '+inf') end
  return redis.call('ZCOUNT', Z, '(' .. max, '+inf')
end

-- ARGV: min, max, offset, limit, from_worst, with_data.
function ops.score_range()
  local e = readable(); if e then return e end
  local wd = ARGV[7] == '1'
  local lo = better_than_range(ARGV[2], ARGV[3])
  local n = redis.call('ZCOUNT', Z, ARGV[2], ARGV[3])
  local off, lim = tonumber(ARGV[4]), tonumber(ARGV[5])
  if off >= n then return window(0, -1, wd) end
  local take = math.min(lim, n - off)
  if ARGV[6] == '1' then return window(lo + n - off - take, lo + n - off - 1, wd) end
  return window(lo + off, lo + off + take - 1, wd)
end

-- ARGV: member, page size, with_data. A window plus the member's position
-- and better-than count, or nil for a missing member.
function ops.around()
  local e = readable(); if e then return e end
  local m = ARGV[2]
  local p = pos_of(m)
  if not p then return false end
  local ps = tonumber(ARGV[3])
  local a = p - math.floor(ps / 2)
  if a < 0 then a = 0 end
  local w = window(a, a + ps - 1, ARGV[4] == '1')
  w[8] = p
  w[9] = rank_better(redis.call('ZSCORE', Z, m))
  return w
end

-- {position, score, better members, total, name, data, ranking, rank
-- count}, or nil.
function ops.entry()
  local e = readable(); if e then return e end
  local m = ARGV[2]
  local sc = redis.call('ZSCORE', Z, m)
  if not sc then return false end
  return {pos_of(m), sc, better(sc), redis.call('ZCARD', Z),
          redis.call('HGET', N, m), redis.call('HGET', D, m), cfg.ranking, rank_better(sc)}
end

-- ARGV: with_data, members... Reply: {ranking, {member[, position, score,
-- better, name, data]}...}
function ops.ranks()
  local e = readable(); if e then return e end
  local wd = ARGV[2] == '1'
  local out = {cfg.ranking}
  for i = 3, #ARGV do
    local m = ARGV[i]
    local sc = redis.call('ZSCORE', Z, m)
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

-- ARGV: p. The entry at clamp(floor(n + 1 - p*n/100), 1, n), as the
-- engine picks it.
function ops.score_at()
  local e = readable(); if e then return e end
  local n = redis.call('ZCARD', Z)
  if n == 0 then return window(0, -1, false) end
  local p = tonumber(ARGV[2])
  local r = math.floor(n + 1 - p * n / 100)
  if r < 1 then r = 1 end
  if r > n then r = n end
  return window(r - 1, r - 1, false)
end

-- ARGV: min, max.
function ops.count()
  local e = readable(); if e then return e end
  return redis.call('ZCOUNT', Z, ARGV[2], ARGV[3])
end

-- ARGV: member, score pairs. Replaces the content wholesale, names and
-- data included (merge/intersect results carry scores only).
function ops.replace()
  local e = writable(); if e then return e end
  redis.call('DEL', Z, N, D)
  for i = 2, #ARGV, 2000 do
    local args = {'ZADD', Z}
    for j = i, math.min(i + 1999, #ARGV), 2 do
      args[#args + 1] = ARGV[j + 1]
      args[#args + 1] = ARGV[j]
    end
    redis.call(unpack(args))
  end
  rebuild_distinct()
  return evict()
end

-- reset, step 1: moves the content to the staging keys in one step, so
-- every write lands wholly before (archived) or after (live board) it.
-- Reply: {members archived, config field, value, ...}.
function ops.take()
  local e = writable(); if e then return e end
  if redis.call('EXISTS', SZ, SN, SD) > 0 then return fail('staging') end
  local n = redis.call('ZCARD', Z)
  for _, p in ipairs({{Z, SZ}, {N, SN}, {D, SD}}) do
    if redis.call('EXISTS', p[1]) == 1 then redis.call('RENAME', p[1], p[2]) end
  end
  redis.call('DEL', U, K)
  local out = {n}
  local fields = redis.call('HGETALL', C)
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end

-- reset, step 2: a chunk of the staged content, best first. ARGV: first,
-- last. Reply: {{member, score, ...}, names, data}.
function ops.staged()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  local args = {'ZRANGE', SZ, tonumber(ARGV[2]), tonumber(ARGV[3])}
  if not cfg.asc then args[#args + 1] = 'REV' end
  args[#args + 1] = 'WITHSCORES'
  local ms = redis.call(unpack(args))
  local mems = {}
  for i = 1, #ms, 2 do mems[#mems + 1] = ms[i] end
  return {ms, hmget(SN, mems), hmget(SD, mems)}
end

-- reset, step 3 (on the archive, which is read-only from its creation):
-- adds entries. ARGV: member, score, name, data quadruples ('' = none).
function ops.load()
  cfg = load_cfg()
  if not cfg then return fail('noboard') end
  for i = 2, #ARGV, 4 do
    local m, sc, name, data = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
    redis.call('ZADD', Z, sc, m)
    dist_add(redis.call('ZSCORE', Z, m))
    if name ~= '' then redis.call('HSET', N, m, name) end
    if data ~= '' then redis.call('HSET', D, m, data) end
  end
  return 1
end

-- reset, step 4: drops the staging keys once the archive holds them.
function ops.unstage()
  redis.call('DEL', SZ, SN, SD)
  return 1
end

local f = ops[OP]
if not f then return fail('op', OP) end
return f()
