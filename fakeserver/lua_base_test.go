package fakeserver

import (
	"strings"
	"testing"
)

// evalCases runs each script with no keys and checks its reply starts with
// want.
func evalCases(t *testing.T, cases []struct{ script, want string }) {
	t.Helper()
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	for _, tc := range cases {
		if r := c.do("EVAL", tc.script, "0"); !strings.HasPrefix(r, tc.want) {
			t.Errorf("%s: %q, want prefix %q", tc.script, r, tc.want)
		}
	}
}

// Redis 7.0 wraps pcall: an error table with a string err field comes back
// as that string. The expected replies are real redis-server 7.0.15's.
func TestLuaPcallReturnsErrString(t *testing.T) {
	evalCases(t, []struct{ script, want string }{
		{`local ok, e = pcall(redis.call, 'NOPE') return type(e)`, bulk("string")},
		{`local ok, e = pcall(redis.call, 'NOPE') return {tostring(ok), e}`, "*2\r\n$5\r\nfalse\r\n" + bulk("ERR Unknown Redis command called from script")},
		{`local ok, e = pcall(error, {err = 'MYERR boom'}) return e`, bulk("MYERR boom")},
		{`local ok, e = pcall(error, redis.error_reply('x')) return e`, bulk("ERR x")},
		{`local ok, e = pcall(error, {x = 1}) return type(e)`, bulk("table")},
		{`local ok, e = pcall(error, 'boom', 0) return e`, bulk("boom")},
		{`return {pcall(function() return 1, 2 end)}`, "*3\r\n:1\r\n:1\r\n:2\r\n"},
		{`local ok, e = pcall(redis.call, 'SET', 'k') return e`, bulk("ERR Wrong number of args calling Redis command from script")},
	})
}

// math.huge is +Inf, and redis.REDIS_VERSION/REDIS_VERSION_NUM match INFO's
// redis_version (real redis-server 7.0.15: 1, "7.0.15", 458767).
func TestLuaMathHugeAndRedisVersion(t *testing.T) {
	evalCases(t, []struct{ script, want string }{
		{`return 1e308*10 == math.huge and 1 or 0`, ":1\r\n"},
		{`return -1e308*10 == -math.huge and 1 or 0`, ":1\r\n"},
		{`return math.huge > 1.7976931348623157e308 and 1 or 0`, ":1\r\n"},
		{`return redis.REDIS_VERSION`, bulk(Version)},
		{`return redis.REDIS_VERSION_NUM`, ":458767\r\n"},
		{`return type(redis.REDIS_VERSION_NUM)`, bulk("number")},
	})
	if Version != "7.0.15" {
		t.Errorf("Version %q: update REDIS_VERSION_NUM's expected value", Version)
	}
	for v, want := range map[string]int{"7.0.15": 0x07000f, "6.2.14": 0x06020e, "7.2": 0x070200} {
		if got := versionNum(v); got != want {
			t.Errorf("versionNum(%q) = %#x, want %#x", v, got, want)
		}
	}
}
