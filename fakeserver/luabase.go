package fakeserver

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Base-library functions that gopher-lua does differently from the Lua
// 5.1 of Redis 7.0, replaced in the node's Lua state before the sandbox is
// made read-only (luaState calls fixBase).

// fixBase replaces L's base functions listed above, and sets math.huge to
// +Inf (gopher-lua's is the largest finite float, so 1e308*10 ==
// math.huge was false).
func fixBase(L *lua.LState) {
	g := L.G.Global
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		m.RawSetString("huge", lua.LNumber(math.Inf(1)))
	}
	if orig, ok := g.RawGetString("pcall").(*lua.LFunction); ok && orig.GFunction != nil {
		g.RawSetString("pcall", L.NewFunction(redisPcall(orig.GFunction)))
	}
}

// redisPcall wraps pcall as Redis 7.0 does (luaRedisPcall): a caught error
// that is a table with a string (or number) err field, as redis.call and
// redis.error_reply raise, comes back as that field, so
// `local ok, e = pcall(redis.call, 'NOPE')` gives a string e. Other errors
// and successes are pcall's own.
func redisPcall(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		n := orig(L)
		if n != 2 || L.Get(-2) != lua.LFalse {
			return n
		}
		if t, ok := L.Get(-1).(*lua.LTable); ok {
			switch msg := t.RawGetString("err").(type) {
			case lua.LString, lua.LNumber:
				L.Replace(-1, msg)
			}
		}
		return n
	}
}

// versionNum is a "major.minor.patch" version as Redis's REDIS_VERSION_NUM:
// 0x00MMmmpp ("7.0.15" is 0x07000f, 458767).
func versionNum(v string) int {
	num := 0
	parts := strings.SplitN(v, ".", 3)
	for i := 0; i < 3; i++ {
		k := 0
		if i < len(parts) {
			k, _ = strconv.Atoi(parts[i])
		}
		num = num<<8 | k&0xff
	}
	return num
}
