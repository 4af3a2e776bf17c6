package fakeserver

import (
	lua "github.com/yuin/gopher-lua"
)

// Base-library functions that gopher-lua does differently from the Lua
// 5.1 of Redis 7.0, replaced in the node's Lua state before the sandbox is
// made read-only (luaState calls fixBase).

// fixBase replaces L's base functions listed above.
func fixBase(L *lua.LState) {
	g := L.G.Global
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
