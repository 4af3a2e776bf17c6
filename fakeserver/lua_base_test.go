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

// tonumber is Lua 5.1's (strtod, strtoul). Each case's expected value is
// what real redis-server 7.0.15 gives; non-integers are compared in Lua, as
// the fake prints numbers differently.
func TestLuaToNumber(t *testing.T) {
	var cases []struct{ script, want string }
	for _, tc := range []struct{ expr, want string }{
		{`'1e3'`, "1000"},
		{`'1E5'`, "100000"},
		{`'1e+2'`, "100"},
		{`'1e-05'`, "== 1e-05"},
		{`'9223372036854775808'`, "== 2^63"},
		{`'0x10'`, "16"},
		{`'0X1F'`, "31"},
		{`'-0x10'`, "-16"},
		{`'+0x10'`, "16"},
		{`'0x1p4'`, "16"},
		{`'0x1.8p1'`, "3"},
		{`'0x.8'`, "== 0.5"},
		{`'0x1P-2'`, "== 0.25"},
		{`'  12  '`, "12"},
		{`'\t12\n'`, "12"},
		{`'\v1\f'`, "1"},
		{`'.5'`, "== 0.5"},
		{`'5.'`, "5"},
		{`'+5'`, "5"},
		{`'1.5e3'`, "1500"},
		{`'12\0ab'`, "12"},
		{`'inf'`, "== math.huge"},
		{`'-inf'`, "== -math.huge"},
		{`'infinity'`, "== math.huge"},
		{`'1e400'`, "== math.huge"},
		{`'1e-400'`, "0"},
		{`'nan'`, "nan"},
		{`'nan(123)'`, "nan"},
		{`12`, "12"},
		{`'0x10', 10`, "16"},
		{`'1e3', 10`, "1000"},
		{`'10', 16`, "16"},
		{`'ff', 16`, "255"},
		{`'FF', 16`, "255"},
		{`'0x1f', 16`, "31"},
		{`'-1', 16`, "== 2^64"},
		{`'-0x10', 16`, "== 2^64 - 16"},
		{`'99999999999999999999', 16`, "== 2^64"},
		{`' 7 ', 8`, "7"},
		{`'z', 36`, "35"},
		{`'10', 2`, "2"},
		{`12, 16`, "18"},
		{`'10', '16'`, "16"},
		{`'10', 16.9`, "16"},
		{`'0x'`, "nil"}, {`'0xg'`, "nil"}, {`'1e'`, "nil"}, {`'1e+'`, "nil"}, {`''`, "nil"}, {`' '`, "nil"},
		{`'.'`, "nil"}, {`'12a'`, "nil"}, {`'1 2'`, "nil"}, {`'- 5'`, "nil"}, {`'  -  1'`, "nil"}, {`'infx'`, "nil"},
		{`'1_000'`, "nil"}, {`'8', 8`, "nil"}, {`'', 16`, "nil"}, {`'0x', 16`, "nil"}, {`'+-1', 16`, "nil"},
		{`{}`, "nil"}, {`nil`, "nil"}, {`true`, "nil"},
	} {
		script := "local x = tonumber(" + tc.expr + ") "
		var want string
		switch {
		case tc.want == "nil":
			script += "return x == nil and 'nil' or type(x)"
			want = bulk("nil")
		case tc.want == "nan":
			script += "return (type(x) == 'number' and x ~= x) and 'nan' or tostring(x)"
			want = bulk("nan")
		case strings.HasPrefix(tc.want, "== "):
			script += "return (type(x) == 'number' and x " + tc.want + ") and 'yes' or tostring(x)"
			want = bulk("yes")
		default:
			script += "return {type(x), x}"
			want = "*2\r\n" + bulk("number") + ":" + tc.want + "\r\n"
		}
		cases = append(cases, struct{ script, want string }{script, want})
	}
	for _, e := range []struct{ expr, msg string }{
		{``, "bad argument #1 to 'tonumber' (value expected)"},
		{`'10', 1`, "bad argument #2 to 'tonumber' (base out of range)"},
		{`'10', 37`, "bad argument #2 to 'tonumber' (base out of range)"},
		{`'10', 'x'`, "bad argument #2 to 'tonumber' (number expected, got string)"},
	} {
		cases = append(cases, struct{ script, want string }{"return tonumber(" + e.expr + ")", "-ERR user_script:1: " + e.msg + " script: "})
	}
	evalCases(t, cases)
}
