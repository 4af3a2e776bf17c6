package fakeserver

import (
	"regexp"
	"strings"
)

// Lock scripts of other Redlock clients, as published in their sources,
// run by the differential test against a real redis-server.
const (
	// The canonical ones from the Redis distributed-lock page.
	canonRelease = `if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end`
	canonExtend = `if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("pexpire",KEYS[1],ARGV[2])
else
    return 0
end`

	// go-redsync/redsync v4 mutex.go: deleteScript, touchWithSetNXScript.
	redsyncDelete = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`
	redsyncTouchNX = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
		return 1
	else
		return 0
	end
`

	// mike-marcacci/node-redlock v5: ACQUIRE_SCRIPT, EXTEND_SCRIPT, RELEASE_SCRIPT.
	nodeAcquire = `
  -- Return 0 if an entry already exists.
  for i, key in ipairs(KEYS) do
    if redis.call("exists", key) == 1 then
      return 0
    end
  end

  -- Create an entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries added.
  return #KEYS
`
	nodeExtend = `
  -- Return 0 if an entry exists with a *different* lock value.
  for i, key in ipairs(KEYS) do
    if redis.call("get", key) ~= ARGV[1] then
      return 0
    end
  end

  -- Update the entry for each provided key.
  for i, key in ipairs(KEYS) do
    redis.call("set", key, ARGV[1], "PX", ARGV[2])
  end

  -- Return the number of entries updated.
  return #KEYS
`
	nodeRelease = `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
`

	// bsm/redislock v0.9 redislock.go: luaObtain.
	redislockObtain = `
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`

	// redisson/redisson RedissonLock: tryLockInnerAsync, unlockInnerAsync,
	// renewExpirationAsync.
	redissonLock = "if ((redis.call('exists', KEYS[1]) == 0) " +
		"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	redissonUnlock = "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call('publish', KEYS[2], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return nil;"
	redissonRenew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return 0;"
)

// luaMsgRE finds the Lua interpreter's own wording inside a script error
// ("user_script:3: <message> script: ..."): gopher-lua words its compile
// and runtime errors differently from PUC Lua, so the differential test
// masks the message and compares the frame, code and line numbers.
var luaMsgRE = regexp.MustCompile(`(user_script:\d+: )[^\r]*?( script: [0-9a-f]{40}, on @user_script:\d+\.\r\n|\r\n)`)

func maskLuaMsg(s string) string { return luaMsgRE.ReplaceAllString(s, "${1}<lua message>${2}") }

// lm is a step whose reply may contain a Lua interpreter message.
func lm(args ...string) step { return step{args: args, mode: luaMasked} }

func scriptSequences() []sequence {
	lock := func(name string, steps ...step) sequence { return sequence{name, steps} }
	return []sequence{
		lock("lua-canonical",
			s("SET", "lk", "tok"), s("EVAL", canonRelease, "1", "lk", "bad"), s("EVAL", canonExtend, "1", "lk", "tok", "50000"),
			tol(200, "PTTL", "lk"), s("EVAL", canonRelease, "1", "lk", "tok"), s("EXISTS", "lk"), s("EVAL", canonRelease, "1", "lk", "tok"),
			s("HSET", "hk", "f", "v"), s("EVAL", canonRelease, "1", "hk", "tok"), s("EVAL", canonExtend, "1", "lk", "tok", "abc"),
			s("SET", "lk", "tok"), s("EVAL", canonExtend, "1", "lk", "tok", "abc"), s("EVAL", canonExtend, "1", "lk", "tok"),
			s("EVAL", canonRelease, "0"), s("EVAL", "  "+canonRelease, "1", "lk", "tok"), s("SCRIPT", "LOAD", canonExtend),
			s("EVALSHA", sha1Hex([]byte(canonExtend)), "1", "lk", "x", "100")),
		lock("lua-redsync",
			s("EVAL", redsyncDelete, "1", "rs", "v"), s("SET", "rs", "v", "PX", "10000"), s("EVAL", redsyncDelete, "1", "rs", "w"),
			s("EVAL", redsyncTouchNX, "1", "rs", "v", "20000"), tol(200, "PTTL", "rs"), s("EVAL", redsyncTouchNX, "1", "rs", "w", "20000"),
			s("EVAL", redsyncDelete, "1", "rs", "v"), s("EVAL", redsyncTouchNX, "1", "rs", "w", "20000"), s("GET", "rs"),
			s("EVAL", redsyncTouchNX, "1", "rs", "w", "0")),
		lock("lua-node-redlock",
			s("EVAL", nodeAcquire, "2", "n1", "n2", "v", "10000"), s("EVAL", nodeAcquire, "2", "n2", "n3", "w", "10000"),
			s("EVAL", nodeExtend, "2", "n1", "n2", "v", "30000"), tol(200, "PTTL", "n2"), s("EVAL", nodeExtend, "2", "n1", "n3", "v", "30000"),
			s("EVAL", nodeRelease, "3", "n1", "n2", "n3", "v"), s("EXISTS", "n1", "n2", "n3"), s("EVAL", nodeAcquire, "1", "n1", "v", "abc")),
		lock("lua-redislock",
			s("EVAL", redislockObtain, "1", "bl", "tok1abc", "4", "10000"), s("EVAL", redislockObtain, "1", "bl", "tok1xyz", "4", "10000"),
			s("GET", "bl"), s("EVAL", redislockObtain, "1", "bl", "tok2abc", "4", "10000"), s("GET", "bl")),
		lock("lua-redisson",
			s("EVAL", redissonLock, "1", "rl", "30000", "id:1"), tol(200, "PTTL", "rl"), s("EVAL", redissonLock, "1", "rl", "30000", "id:1"),
			s("HGETALL", "rl"), tol(200, "EVAL", redissonLock, "1", "rl", "30000", "id:2"), s("EVAL", redissonRenew, "1", "rl", "40000", "id:1"),
			s("EVAL", redissonRenew, "1", "rl", "40000", "id:2"), s("EVAL", redissonUnlock, "2", "rl", "ch", "0", "30000", "id:2"),
			s("EVAL", redissonUnlock, "2", "rl", "ch", "0", "30000", "id:1"), s("TYPE", "rl"), s("EVAL", redissonUnlock, "2", "rl", "ch", "0", "30000", "id:1"),
			s("EXISTS", "rl"), s("SET", "rl", "str"), s("EVAL", redissonLock, "1", "rl", "30000", "id:1")),
		lock("lua-stack-limits", // issue 34 R9: Lua 5.1's LUAI_MAXCSTACK, Redis's texts
			s("EVAL", "return #{unpack({},1,1000000)}", "0"), s("EVAL", "return #{unpack({},1,7997)}", "0"), s("EVAL", "return #{unpack({},1,7998)}", "0"),
			s("EVAL", "local t={} for i=1,7999 do t[i]=i end return #{unpack(t)}", "0"), s("EVAL", "local t={} for i=1,8000 do t[i]=i end return #{unpack(t)}", "0"),
			s("EVAL", `return #{string.byte(string.rep("x",1000000),1,-1)}`, "0"), s("EVAL", `return #{string.byte(string.rep("x",8000),1,7997)}`, "0"),
			s("EVAL", `return #{string.byte(string.rep("x",8000),1,7998)}`, "0"), s("EVAL", `return {string.byte("abc"), string.byte("abc",-1), #{string.byte("abc",3,2)}}`, "0"),
			s("EVAL", "return {unpack({1,2,3},2)}", "0"), s("EVAL", "return #{unpack({},-5,100)}", "0")),
		lock("lua-sandbox", // issue 34 R8: read-only at every level, and the next script is unharmed
			s("EVAL", "redis.call = function() return 1 end", "0"), s("EVAL", "string.rep = nil", "0"), s("EVAL", "table.insert = nil", "0"),
			s("EVAL", "math.floor = nil", "0"), s("EVAL", `getmetatable("").__index = {}`, "0"), s("EVAL", `getmetatable("").__index.upper = nil`, "0"),
			s("EVAL", `rawset(_G, "x", 1)`, "0"), s("EVAL", "setmetatable(_G, nil)", "0"), s("EVAL", "getmetatable(_G).__index = nil", "0"),
			s("EVAL", "setfenv(0, {})", "0"), s("EVAL", "return getfenv(0)", "0"), s("EVAL", "redis = nil", "0"), s("EVAL", "x = 1", "0"),
			s("EVAL", `rawset(string, "rep", nil)`, "0"), s("EVAL", "setmetatable(string, {})", "0"), s("EVAL", "table.insert(string, 1)", "0"),
			s("EVAL", `local mt = getmetatable("") rawset(mt, "__index", {})`, "0"), s("EVAL", "getmetatable(_G).__newindex = nil", "0"),
			s("EVAL", "return {type(getmetatable(_G)), getmetatable(string) == nil, getmetatable('') ~= nil, getmetatable(getmetatable(_G)) == nil}", "0"),
			s("EVAL", "return {rawget(string, 'rep') ~= nil, rawget(_G, 'nosuch') == nil, _G._G == _G, rawequal(getmetatable('').__index, string)}", "0"),
			s("EVAL", "setmetatable(KEYS, {__index = function() return 'z' end}) KEYS[1] = 'x' return KEYS[1]", "0"), s("EVAL", "return KEYS[5]", "0"),
			s("EVAL", "return {redis.call('ping')['ok'], string.rep('a', 3), ('abc'):upper(), math.floor(2.5), table.concat({1, 2}, ',')}", "0"),
			s("EVAL", "return nosuch", "0")),
		lock("lua-conversions",
			s("EVAL", "return {1,2,{3,'a'},nil,4}", "0"), s("EVAL", "return 3.99", "0"), s("EVAL", "return -3.5", "0"),
			s("EVAL", "return true", "0"), s("EVAL", "return false", "0"), s("EVAL", "return nil", "0"), s("EVAL", "return {}", "0"),
			s("EVAL", "return {1,'x',true,false,{err='in'}}", "0"), s("EVAL", "return {ok='fine'}", "0"), s("EVAL", "return {err='E1 bad'}", "0"),
			s("EVAL", "return redis.status_reply('FINE')", "0"), s("EVAL", "return redis.error_reply('My Error')", "0"),
			s("EVAL", "return redis.error_reply('-X y')", "0"), s("EVAL", "return redis.error_reply('')", "0"), s("EVAL", "return redis.error_reply('NoSpace')", "0"),
			s("EVAL", "return redis.sha1hex('')", "0"), s("EVAL", "return redis.call('ping')", "0"), s("EVAL", "return redis.call('set','x','1')['ok']", "0"),
			s("EVAL", "return type(redis.call('get','nokey'))", "0"), s("SET", "cnt", "5"), s("EVAL", "return redis.call('incrby', KEYS[1], 2.0)", "1", "cnt"),
			s("EVAL", "return redis.call('incr', 1.5)", "0"), s("EVAL", "return {KEYS[1], ARGV[1], ARGV[2], #KEYS, #ARGV}", "1", "a", "b", "c"),
			s("HSET", "h", "f1", "v1", "f2", "v2"), s("EVAL", "return redis.call('hgetall', 'h')", "0"), s("EVAL", "return redis.pcall('incr', 'h')", "0"),
			s("EVAL", "local t = redis.pcall('incr','h'); return t['err']", "0"), s("EVAL", "return redis.call('lrange', 'nolist', 0, -1)", "0"),
			s("EVAL", "return math.huge", "0"), s("EVAL", "return 'a\\r\\nb'", "0"), s("EVAL", "return {err='a\\r\\nb'}", "0"),
			s("EVAL", "return redis.call('exists', 'x', 'nokey', 'x')", "0"), s("EVAL", "return tonumber('12') + #'abc'", "0")),
		lock("lua-errors",
			s("SET", "str", "abc"), s("EVAL", "return redis.call('incr','str')", "0"), s("EVAL", "\n\nreturn redis.call('incr','str')", "0"),
			lm("EVAL", "return 1+nil", "0"), lm("EVAL", "local a = 1\nlocal b = nil\nreturn a + b", "0"), lm("EVAL", "return (", "0"),
			lm("EVAL", "x = = 1", "0"), s("EVAL", "return redis.call('nosuch')", "0"), s("EVAL", "return redis.call('get')", "0"),
			s("EVAL", "return redis.call('get',{})", "0"), s("EVAL", "return redis.call('incr', true)", "0"), s("EVAL", "return redis.call()", "0"),
			s("EVAL", "error('boom')", "0"), s("EVAL", "\nerror('boom')", "0"), s("EVAL", "error({err='MYERR x'})", "0"), s("EVAL", "error()", "0"),
			s("EVAL", "x = 1", "0"), s("EVAL", "return y", "0"), s("EVAL", "return os", "0"), s("EVAL", "return loadstring", "0"),
			s("EVAL", "return redis.call('eval','return 1','0')", "0"), s("EVAL", "return redis.call('multi')", "0"), s("EVAL", "return redis.pcall('nosuch')", "0"),
			s("EVAL", "return redis.call('hget','str','f')", "0"), s("EVAL", "return redis.call('get','h')", "0"), s("EVAL", "return redis.call('script','kill')", "0"),
			lm("EVALSHA", sha1Hex([]byte("return 1+nil")), "0"), s("SCRIPT", "EXISTS", sha1Hex([]byte("return 1+nil")), sha1Hex([]byte("return ("))),
			lm("SCRIPT", "LOAD", "return ("), s("SCRIPT", "LOAD", "return 1"), s("EVALSHA", sha1Hex([]byte("return 1")), "0"),
			s("EVALSHA", strings.ToUpper(sha1Hex([]byte("return 1"))), "0"), s("SCRIPT", "FLUSH"), s("EVALSHA", sha1Hex([]byte("return 1")), "0")),
	}
}
