-- Redis's scripting environment, built once per Lua state (chunk name
-- "=podium": the error handler skips these frames, so an error points at
-- the user's script as Redis's does). Receives the Rust side's functions;
-- returns the function that runs a script.
--
-- Scripts share one Lua state, so nothing one script can reach may be
-- changed by it: each run gets an environment of its own (an empty table
-- holding KEYS, ARGV and _G, reading the rest from the globals), and
-- everything shared — the globals, the libraries, the string metatable —
-- is reached only through read-only views. What could get past them is
-- gone: setfenv/getfenv (a function's or the thread's environment),
-- newproxy (a finalizer that runs in a later script), string.dump and
-- binary chunks (bytecode is not checked by Lua 5.1), collectgarbage's
-- settings (a stopped collector would starve every later script).
local impl = ...
local dbg = debug
local G = _G
local error, type, tostring, rawget, rawequal = error, type, tostring, rawget, rawequal
local setmetatable, getmetatable, select, next = setmetatable, getmetatable, select, next
local raw_pcall, raw_xpcall, raw_rawset, raw_setfenv = pcall, xpcall, rawset, setfenv
local raw_loadstring, raw_pairs, raw_collect = loadstring, pairs, collectgarbage
local str_find, str_sub, str_byte, tbl_concat = string.find, string.sub, string.byte, table.concat

local READONLY = "Attempt to modify a readonly table"

-- Tables a script may read but not change (Redis 7.0's read-only tables),
-- each a view of the real table it reads through.
local readonly = {}

local function refuse()
  error(READONLY, 2)
end

-- A read-only view of `t`. Its metatable is never handed out: what
-- getmetatable answers is `shown` (itself read-only), or false.
local function protect(t, shown)
  local p = setmetatable({}, { __index = t, __newindex = refuse, __metatable = shown or false })
  readonly[p] = t
  return p
end

-- The environment of the script running now (nil between runs).
local current

-- The Rust functions raise Redis's error tables by leaving them with
-- `impl.take_error` (a Rust error cannot carry a Lua table); they are C
-- functions, so a `return redis.call(...)` keeps the script's frame.
local take_error = impl.take_error
local function unwrap(e)
  if type(e) == "userdata" then
    local t = take_error()
    if t ~= nil then
      return t
    end
  end
  return e
end

-- The innermost frame of the user's code, from `level` up.
local function user_frame(level)
  local info = dbg.getinfo(level, "Sl")
  while info and (info.what == "C" or info.source == "=podium") do
    level = level + 1
    info = dbg.getinfo(level, "Sl")
  end
  return info
end

-- A C library function raising from inside one of this chunk's wrappers
-- names this chunk's line: name the user's instead, as without a wrapper.
local function relocate(e)
  if type(e) == "string" and str_find(e, "^podium:%d+: ") then
    local rest = str_sub(e, (select(2, str_find(e, "^podium:%d+: "))) + 1)
    local info = user_frame(3)
    if info and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline .. ": " .. rest
    end
    return rest
  end
  return e
end

local redis = {}
redis.call = impl.redis_call
redis.pcall = impl.redis_pcall
redis.error_reply = impl.error_reply
redis.status_reply = impl.status_reply
redis.sha1hex = impl.sha1hex
redis.log = impl.log
redis.setresp = impl.setresp
redis.set_repl = impl.set_repl
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = impl.version, impl.version_num

-- Errors a script catches with pcall come back as their message (Redis 7's
-- pcall); once the script is being stopped, nothing may catch that.
local stopping = impl.stopping
local function caught(ok, ...)
  if not ok then
    if stopping() then
      error((...), 0)
    end
    local e = unwrap((...))
    if type(e) == "table" and type(rawget(e, "err")) == "string" then
      return false, rawget(e, "err")
    end
    -- A library's Lua error (struct's), raised from Rust as a string.
    if type(e) == "string" then
      return false, relocate(e)
    end
  end
  return ok, ...
end
G.pcall = function(f, ...) return caught(raw_pcall(f, ...)) end
G.xpcall = function(f, h) return caught(raw_xpcall(f, h)) end
local resume = coroutine.resume
local co = {}
for k, v in next, coroutine do co[k] = v end
co.resume = function(...) return caught(resume(...)) end
G.coroutine = co

-- The script's own environment is read-only to it as the globals are.
local function is_readonly(t)
  return readonly[t] ~= nil or (current ~= nil and rawequal(t, current))
end

G.rawset = function(t, k, v)
  if is_readonly(t) then
    error(READONLY, 0)
  end
  return raw_rawset(t, k, v)
end

G.setmetatable = function(t, mt)
  if is_readonly(t) then
    error(READONLY, 0)
  end
  return setmetatable(t, mt)
end

-- pairs over a view walks what it shows; over the script's environment,
-- its own names and then the globals'.
G.pairs = function(t)
  local real = readonly[t]
  if real ~= nil then
    return function(_, k) return next(real, k) end, t, nil
  end
  if current ~= nil and rawequal(t, current) then
    local env = t
    local in_globals = false
    return function(_, k)
      local v
      if not in_globals then
        k, v = next(env, k)
        if k ~= nil then
          return k, v
        end
        in_globals = true
      end
      repeat
        k, v = next(G, k)
      until k == nil or rawget(env, k) == nil
      return k, v
    end, t, nil
  end
  return raw_pairs(t)
end

-- Source only: Lua 5.1 runs bytecode unchecked. What loads runs in the
-- loading script's environment, not in the globals.
local function load_source(s, name, what)
  if type(s) == "string" and str_byte(s, 1) == 27 then
    return nil, what .. " refuses a binary chunk: scripts are Lua source"
  end
  local f, e = raw_loadstring(s, name)
  if f and current then
    raw_setfenv(f, current)
  end
  return f, e
end
G.loadstring = function(s, name)
  return load_source(s, name, "loadstring")
end
G.load = function(reader, name)
  if type(reader) ~= "function" then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ")", 2)
  end
  local parts = {}
  while true do
    local piece = reader()
    if piece == nil or piece == "" then
      break
    end
    if type(piece) ~= "string" then
      return nil, "reader function must return a string"
    end
    parts[#parts + 1] = piece
  end
  return load_source(tbl_concat(parts), name or "=(load)", "load")
end

-- The collector's settings are the server's: a script may run it or read
-- it, not stop it or slow it for the scripts after it.
G.collectgarbage = function(opt, arg)
  if opt == nil or opt == "collect" or opt == "count" or opt == "step" then
    return raw_collect(opt, arg)
  end
  error("collectgarbage('" .. tostring(opt) .. "') is not allowed in scripts: only collect, count and step are", 2)
end

-- table.sort's comparisons are Lua calls, which the count hook sees: in C
-- they run unseen, and Lua 5.1's quicksort is quadratic on some orders.
local raw_sort = table.sort
local function lt(a, b) return a < b end
local function default_lt(a, b)
  local ta, tb = type(a), type(b)
  if ta == tb and (ta == "number" or ta == "string") then
    return a < b
  end
  if ta ~= tb then
    error("attempt to compare " .. ta .. " with " .. tb, 0)
  end
  local ok, r = raw_pcall(lt, a, b)
  if ok then
    return r
  end
  if type(r) == "string" and str_find(r, "^podium:%d+: attempt to compare") then
    r = "attempt to compare two " .. ta .. " values"
  end
  error(r, 0)
end
table.sort = function(t, comp)
  if comp == nil then
    return raw_sort(t, default_lt)
  end
  return raw_sort(t, function(a, b) return comp(a, b) end)
end

string.dump = nil
G.redis = redis
G.dofile, G.loadfile, G.print, G.module, G.require = nil, nil, nil, nil, nil
G.setfenv, G.getfenv, G.newproxy, G._G = nil, nil, nil, nil
for _, name in G.ipairs({ "redis", "string", "math", "table", "coroutine", "bit", "cjson", "cmsgpack", "struct" }) do
  if rawget(G, name) then
    raw_rawset(G, name, protect(rawget(G, name)))
  end
end
G.debug = nil

-- Strings' methods are the real string table's (a method call stays one
-- lookup), but what getmetatable('') answers is a read-only view.
local string_mt = getmetatable("")
string_mt.__metatable = protect({ __index = rawget(G, "string") })

-- The handler Redis's scripts run under: the error as a table with the
-- script's line that raised it.
local function handler(err)
  local info = user_frame(2)
  err = unwrap(err)
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring(relocate(err)) }
  end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

-- Globals are read-only, and reading an undeclared one is an error.
setmetatable(G, {
  __index = function(_, name)
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = refuse,
  __metatable = false,
})

-- A run's environment: its own names, the globals behind them.
local env_mt = { __index = G, __newindex = refuse, __metatable = protect({}) }

return function(f, keys, argv)
  local env = { KEYS = keys, ARGV = argv, _G = false }
  env._G = env
  current = setmetatable(env, env_mt)
  raw_setfenv(f, env)
  local ok, v = raw_xpcall(f, handler)
  current = nil
  return ok, v
end
