-- POST a random score for one of 100k members.
math.randomseed(os.time())
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  local m = math.random(0, 99999)
  local s = math.random(0, 1000000000)
  return wrk.format(nil, "/v1/boards/bench/scores", nil, '{"member":"m' .. m .. '","score":' .. s .. '}')
end
