package fakeserver

import (
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock/scripts"
)

// TestScriptInfiniteLoopBounded: a script that never ends makes other
// clients get BUSY after ScriptBusyAfter; SCRIPT KILL stops it (the caller
// gets Redis's error); a script that wrote cannot be killed by SCRIPT KILL
// but the node stops it after ScriptKillAfter. The node keeps serving.
func TestScriptInfiniteLoopBounded(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: 100 * time.Millisecond, ScriptKillAfter: 700 * time.Millisecond})
	loop, other := dial(t, n.Addr()), dial(t, n.Addr())
	loop.send("EVAL", "while true do end", "0")
	time.Sleep(300 * time.Millisecond)
	eqReply(t, "busy", other.do("GET", "k"), errReply(busyErr))
	eqReply(t, "kill", other.do("SCRIPT", "KILL"), okReply)
	r := loop.read()
	if !hasPrefix(r, "-ERR Script killed by user with SCRIPT KILL... script: ") || !strings.HasSuffix(r, ", on @user_script:1.\r\n") {
		t.Errorf("killed script replied %q", r)
	}
	eqReply(t, "served after kill", other.do("SET", "k", "v"), okReply)
	eqReply(t, "notbusy", other.do("SCRIPT", "KILL"), errReply("NOTBUSY No scripts in execution right now."))

	loop.send("EVAL", "redis.call('set', KEYS[1], 'x')\nwhile true do end", "1", "w")
	time.Sleep(300 * time.Millisecond)
	eqReply(t, "unkillable", other.do("SCRIPT", "KILL"), errReply(unkillableErr))
	r = loop.read()
	if !hasPrefix(r, "-ERR fake server: script killed after running for 700ms (Config.ScriptKillAfter) script: ") || !strings.HasSuffix(r, ", on @user_script:2.\r\n") {
		t.Errorf("hard-killed script replied %q", r)
	}
	eqReply(t, "served after hard kill", other.do("GET", "w"), bulk("x"))
	eqReply(t, "same conn works", loop.do("PING"), pongReply)
}

// TestBadScripts: syntax and runtime errors, deep recursion and huge
// replies give errors, never a panic or a dead node.
func TestBadScripts(t *testing.T) {
	n := startNode(t, Config{ScriptBusyAfter: time.Second, ScriptKillAfter: 2 * time.Second})
	c := dial(t, n.Addr())
	for _, tc := range []struct{ script, prefix string }{
		{"return (", "-ERR Error compiling script (new function): user_script:1: "},
		{"local t = nil\nreturn t.x", "-ERR user_script:2: "},
		{"local function f() return f() + 1 end return f()", "-ERR "},
		{"return string.rep('x', 1e10)", "-ERR "},
		{"local t = {} for i=1,1e9 do t[i] = i end", "-ERR "},
		{"return redis.call('get', string.rep('k', 2e6))", ":"},
	} {
		r := c.do("EVAL", tc.script, "0")
		if tc.prefix == ":" {
			if r != nullBulk {
				t.Errorf("%q: %.200q", tc.script, r)
			}
			continue
		}
		if !hasPrefix(r, tc.prefix) {
			t.Errorf("%q: %.200q, want prefix %q", tc.script, r, tc.prefix)
		}
	}
	eqReply(t, "alive", c.do("PING"), pongReply)
}

// TestNativeScriptsMatchLua runs redmux's own lock scripts through their
// native implementations and through Lua (Config.LuaOnly) on the same
// inputs, including error cases, and compares the replies byte for byte.
func TestNativeScriptsMatchLua(t *testing.T) {
	native := startNode(t, Config{})
	luaOnly := startNode(t, Config{LuaOnly: true})
	rel, ext := scripts.Release, scripts.Extend
	steps := [][]string{
		{"SET", "k", "tok"}, {"HSET", "h", "f", "v"},
		{"EVAL", ext.Text, "1", "k", "tok", "50000"}, {"PTTL", "k"}, {"EVAL", ext.Text, "1", "k", "bad", "50000"},
		{"EVAL", ext.Text, "1", "k", "tok"}, {"EVAL", ext.Text, "1", "k", "tok", "abc"}, {"EVAL", ext.Text, "1", "k", "tok", "-5"},
		{"EXISTS", "k"}, {"SET", "k", "tok"}, {"EVAL", ext.Text, "1", "k", "tok", "9223372036854775807"}, {"EVAL", ext.Text, "0"},
		{"EVAL", ext.Text, "1", "h", "tok", "100"}, {"EVAL", ext.Text, "1", "nokey", "tok", "100"},
		{"EVAL", rel.Text, "1", "k", "bad"}, {"EVAL", rel.Text, "1", "k", "tok"}, {"EVAL", rel.Text, "1", "k", "tok"}, {"EVAL", rel.Text, "0"},
		{"EVAL", rel.Text, "1", "k"}, {"EVAL", rel.Text, "1", "h", "v"}, {"EVALSHA", rel.SHA, "1", "k", "tok"}, {"EVALSHA", ext.SHA, "1", "k", "tok", "1"},
		{"SET", "k", "tok"}, {"EVALSHA", rel.SHA, "2", "k", "x", "tok"}, {"EXISTS", "k"},
	}
	a, b := dial(t, native.Addr()), dial(t, luaOnly.Addr())
	for _, st := range steps {
		ra, rb := a.do(st...), b.do(st...)
		if st[0] == "PTTL" {
			continue
		}
		if ra != rb {
			t.Errorf("%.60q:\n native %q\n lua    %q", st, ra, rb)
		}
	}
}

// TestGoHelpersSeeScriptsAndClock: keys seeded from Go are what scripts
// and commands see, and FastForward expires them for both.
func TestGoHelpersSeeScriptsAndClock(t *testing.T) {
	cl := RunT(t, 2)
	n := cl.Nodes[1]
	n.Set("k", "tok", 5*time.Second)
	c := dial(t, n.Addr())
	eqReply(t, "lua sees seeded key", c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k"), bulk("tok"))
	if got := n.Keys(); len(got) != 1 || got[0] != "k" {
		t.Errorf("Keys = %q", got)
	}
	cl.FastForward(4 * time.Second)
	if ttl := n.TTL("k"); ttl <= 0 || ttl > time.Second {
		t.Errorf("TTL after 4s forward = %v", ttl)
	}
	cl.FastForward(2 * time.Second)
	eqReply(t, "expired for lua", c.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k"), nullBulk)
	if _, ok := n.Get("k"); ok {
		t.Error("key survived FastForward past its TTL")
	}
	n.Set("p", "v", 0)
	if n.TTL("p") != -1 || !n.Del("p") || n.Del("p") {
		t.Error("Set without TTL / Del")
	}
}

// TestLuaSandboxReadOnly (issue 34 R8): the sandbox was read-only at the top
// level only, so one EVAL could replace redis.call, library functions, the
// string metatable, _G's protection or the environment for every later
// script. Each escape attempt must now fail with Redis 7.0.15's error, and a
// normal script run after it must answer exactly as before any attempt.
func TestLuaSandboxReadOnly(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	const normal = `local ok = pcall(function() return undefined_global end)
return {redis.call('set', KEYS[1], 'v')['ok'], string.rep('ab', 2), ('abc'):upper(), table.concat({1, 2}, ','),
	math.floor(2.5), tostring(ok), tostring(ARGV[2]), type(getmetatable(_G)), #KEYS, select('#', unpack({1, 2, 3}))}`
	run := func() string { return c.do("EVAL", normal, "1", "k", "a") }
	want := "*10\r\n$2\r\nOK\r\n$4\r\nabab\r\n$3\r\nABC\r\n$3\r\n1,2\r\n:2\r\n$5\r\nfalse\r\n$3\r\nnil\r\n$5\r\ntable\r\n:1\r\n:3\r\n"
	eqReply(t, "normal script before", run(), want)
	const (
		assign = "-ERR user_script:1: Attempt to modify a readonly table script: " // an assignment
		native = "-ERR Attempt to modify a readonly table script: "                // rawset, setmetatable, table.insert
	)
	for _, tc := range []struct{ script, want string }{
		{`redis.call = function() return 'pwned' end`, assign},
		{`redis.pcall = redis.call`, assign},
		{`string.rep = function() return 'pwned' end`, assign},
		{`local s = string; s.upper = function() return 'pwned' end`, assign},
		{`table.concat = function() return 'pwned' end`, assign},
		{`math.floor = function() return 42 end`, assign},
		{`getmetatable('').__index = {upper = function() return 'pwned' end}`, assign},
		{`getmetatable('').__index.upper = function() return 'pwned' end`, assign},
		{`getmetatable(_G).__index = nil`, assign},
		{`getmetatable(_G).__newindex = function(t, k, v) rawset(t, k, v) end`, assign},
		{`redis = {call = function() return 'pwned' end}`, assign},
		{`_G.string = {}`, assign},
		{`undefined_global = 1`, assign},
		{`rawset(_G, 'redis', {})`, native},
		{`rawset(string, 'rep', function() return 'pwned' end)`, native},
		{`rawset(getmetatable(''), '__index', {})`, native},
		{`rawset(getmetatable(_G), '__index', function() return 'pwned' end)`, native},
		{`setmetatable(_G, nil)`, native},
		{`setmetatable(string, {__index = function() return 'pwned' end})`, native},
		{`setmetatable(getmetatable(_G), {})`, native},
		{`table.insert(redis, 'pwned')`, native},
		{`setmetatable('', nil)`, "-ERR user_script:1: bad argument #1 to setmetatable (table expected, got string) script: "},
		{`setfenv(0, {redis = {}})`, "-ERR user_script:1: Script attempted to access nonexistent global variable 'setfenv' script: "},
		{`setfenv(1, {})`, "-ERR user_script:1: Script attempted to access nonexistent global variable 'setfenv' script: "},
		{`return getfenv(0)`, "-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: "},
		// KEYS and ARGV are the script's own (writable, as in Redis), and
		// fresh for the next one
		{`setmetatable(ARGV, {__index = function() return 'pwned' end}) KEYS[2] = 'x' return ARGV[2]`, bulk("pwned")},
	} {
		if r := c.do("EVAL", tc.script, "0"); !hasPrefix(r, tc.want) {
			t.Errorf("%s: %.200q, want prefix %q", tc.script, r, tc.want)
		}
		eqReply(t, "normal script after "+tc.script, run(), want)
	}
	// reads through the protection behave as in Redis
	for _, tc := range []struct{ script, want string }{
		{`return rawget(string, 'rep') ~= nil`, ":1\r\n"},
		{`local k = 0 for _ in pairs(math) do k = k + 1 end return k > 10`, ":1\r\n"},
		{`return next(redis) ~= nil`, ":1\r\n"},
		{`return rawequal(getmetatable('').__index, string)`, ":1\r\n"},
		{`return _G._G == _G`, ":1\r\n"},
		{`return getmetatable(string)`, nullBulk},
		{`return getmetatable(getmetatable(_G))`, nullBulk},
		{`local t = setmetatable({}, {__index = string}) return t.upper('x')`, bulk("X")},
	} {
		eqReply(t, tc.script, c.do("EVAL", tc.script, "0"), tc.want)
	}
}
