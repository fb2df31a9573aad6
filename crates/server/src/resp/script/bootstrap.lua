-- Redis's scripting environment, built once per Lua state (chunk name
-- "=podium": the error handler skips these frames, so an error points at
-- the user's script as Redis's does). Receives the Rust side's functions;
-- returns the function that runs a script.
local impl = ...
local dbg = debug
local G = _G
local error, type, tostring, rawget, rawequal = error, type, tostring, rawget, rawequal
local setmetatable, select = setmetatable, select
local raw_pcall, raw_xpcall, raw_rawset = pcall, xpcall, rawset

-- Tables a script may read but not change (Redis 7.0's read-only tables).
local readonly = setmetatable({}, { __mode = "k" })

local function refuse()
  error("Attempt to modify a readonly table", 2)
end

-- A read-only view of `t`.
local function protect(t)
  local p = setmetatable({}, { __index = t, __newindex = refuse, __metatable = false })
  readonly[p] = true
  return p
end

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
local function caught(ok, ...)
  if not ok then
    if impl.stopping() then
      error((...), 0)
    end
    local e = unwrap((...))
    if type(e) == "table" and type(rawget(e, "err")) == "string" then
      return false, rawget(e, "err")
    end
  end
  return ok, ...
end
G.pcall = function(f, ...) return caught(raw_pcall(f, ...)) end
G.xpcall = function(f, h) return caught(raw_xpcall(f, h)) end
local resume = coroutine.resume
local co = {}
for k, v in G.next, coroutine do co[k] = v end
co.resume = function(...) return caught(resume(...)) end
G.coroutine = co

G.rawset = function(t, k, v)
  if readonly[t] or rawequal(t, G) then
    error("Attempt to modify a readonly table", 2)
  end
  return raw_rawset(t, k, v)
end

G.redis = redis
G.dofile, G.loadfile, G.print, G.module, G.require = nil, nil, nil, nil, nil
for _, name in G.ipairs({ "redis", "string", "math", "table", "coroutine", "bit", "cjson", "cmsgpack", "struct" }) do
  if rawget(G, name) then
    raw_rawset(G, name, protect(rawget(G, name)))
  end
end
G.debug = nil

-- The handler Redis's scripts run under: the error as a table with the
-- script's line that raised it.
local function handler(err)
  local level = 2
  local info = dbg.getinfo(level, "nSl")
  while info and (info.what == "C" or info.source == "=podium") do
    level = level + 1
    info = dbg.getinfo(level, "nSl")
  end
  err = unwrap(err)
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring(err) }
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

return function(f)
  return raw_xpcall(f, handler)
end
