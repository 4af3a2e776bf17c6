package fakeserver

import (
	lua "github.com/yuin/gopher-lua"
)

// The Lua sandbox is read-only at every level, as Redis 7's: the globals,
// every table reachable from them (string, table, math, redis, the globals'
// own metatable) and the string metatable. Redis marks those tables
// read-only inside its Lua VM; gopher-lua has no such mark, so each is
// replaced, wherever a script can reach it, by an empty proxy whose
// metatable reads from the real table and refuses writes. Scripts never
// see a real table or a proxy's metatable: getmetatable, setmetatable,
// rawget, rawset, next, pairs and table.insert are wrapped to act on the
// real table behind a proxy, or to refuse. setfenv and getfenv are absent,
// as in Redis 7.0.15. Before this (issue 34 R8), one EVAL could replace
// redis.call, a library function, the string metatable, _G's protection
// (rawset, setmetatable(_G, nil)) or the thread's environment (setfenv(0,
// ...)) for every later script of every client.
//
// Errors are Redis's: an assignment reports "user_script:<line>: Attempt to
// modify a readonly table"; rawset, setmetatable and table.insert report it
// without a position (they are C functions in Redis).
//
// Left as gopher-lua does them: ipairs over a proxy (the library tables
// have no array part, so it yields nothing, as in Redis) and # (0 for both).

const readonlyTable = "Attempt to modify a readonly table"

type sandbox struct {
	proxy    map[*lua.LTable]*lua.LTable // real table -> its proxy
	real     map[*lua.LTable]*lua.LTable // proxy -> its real table
	apparent map[*lua.LTable]lua.LValue  // proxy -> what getmetatable returns
	strMT    lua.LValue                  // what getmetatable("") returns
}

// protectSandbox makes L's globals read-only at every level; it is called
// once, when the node's Lua state is built and all globals are in place.
// Scripts compiled afterwards get the globals' proxy as their environment.
func (e *scriptEngine) protectSandbox(L *lua.LState) {
	g := L.G.Global
	for _, name := range []string{"setfenv", "getfenv"} {
		g.RawSetString(name, lua.LNil)
	}
	sb := &sandbox{
		proxy:    map[*lua.LTable]*lua.LTable{},
		real:     map[*lua.LTable]*lua.LTable{},
		apparent: map[*lua.LTable]lua.LValue{},
	}
	// raise refuses a write; with where set it carries the script's
	// position, as an assignment's error does in Redis.
	raise := func(L *lua.LState, where bool) {
		if where {
			luaRaiseWhere(L, readonlyTable)
		}
		e.line = callerLine(L)
		L.Error(lua.LString(readonlyTable), 0)
	}
	newindex := L.NewFunction(func(L *lua.LState) int {
		raise(L, true)
		return 0
	})
	skip := map[lua.LValue]bool{g.RawGetString("KEYS"): true, g.RawGetString("ARGV"): true}
	var walk func(t *lua.LTable) *lua.LTable
	walk = func(t *lua.LTable) *lua.LTable {
		if p, ok := sb.proxy[t]; ok {
			return p
		}
		p := L.NewTable()
		sb.proxy[t], sb.real[p] = p, t
		pm := L.NewTable()
		pm.RawSetString("__index", t)
		pm.RawSetString("__newindex", newindex)
		p.Metatable = pm
		// every table the real one holds is reached through its proxy
		type kv struct{ k, v lua.LValue }
		var inner []kv
		t.ForEach(func(k, v lua.LValue) {
			if vt, ok := v.(*lua.LTable); ok && !skip[v] {
				inner = append(inner, kv{k, vt})
			}
		})
		for _, x := range inner {
			t.RawSet(x.k, walk(x.v.(*lua.LTable)))
		}
		sb.apparent[p] = lua.LNil
		if mt, ok := t.Metatable.(*lua.LTable); ok {
			sb.apparent[p] = walk(mt)
		}
		return p
	}
	env := walk(g)
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		sb.strMT = walk(mt)
	}
	sb.wrapBuiltins(L, g, raise)
	L.Env = env
}

// isProxy returns the real table behind v, when v is a proxy.
func (sb *sandbox) isProxy(v lua.LValue) (*lua.LTable, bool) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, false
	}
	r, ok := sb.real[t]
	return r, ok
}

// wrapBuiltins replaces the built-ins that would reach behind a proxy in g
// (getmetatable, setmetatable, rawset, rawget, next, pairs, table.insert)
// by versions that act on the real table or refuse (raise).
func (sb *sandbox) wrapBuiltins(L *lua.LState, g *lua.LTable, raise func(L *lua.LState, where bool)) {
	wrapG := func(name string, fn func(L *lua.LState, orig lua.LGFunction) int) {
		orig := g.RawGetString(name).(*lua.LFunction).GFunction
		g.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return fn(L, orig) }))
	}
	wrapG("getmetatable", func(L *lua.LState, orig lua.LGFunction) int {
		v := L.CheckAny(1)
		if p, ok := v.(*lua.LTable); ok {
			if mt, ok := sb.apparent[p]; ok {
				L.Push(mt)
				return 1
			}
		}
		if v.Type() == lua.LTString && sb.strMT != nil {
			L.Push(sb.strMT)
			return 1
		}
		return orig(L)
	})
	wrapG("setmetatable", func(L *lua.LState, orig lua.LGFunction) int {
		// Lua 5.1 sets the metatable of tables only: gopher-lua would
		// set the string (or number) metatable of every later script
		if _, ok := sb.isProxy(L.CheckTable(1)); ok {
			raise(L, false)
		}
		return orig(L)
	})
	wrapG("rawset", func(L *lua.LState, orig lua.LGFunction) int {
		if _, ok := sb.isProxy(L.CheckTable(1)); ok {
			raise(L, false)
		}
		return orig(L)
	})
	wrapG("rawget", func(L *lua.LState, orig lua.LGFunction) int {
		if r, ok := sb.isProxy(L.CheckTable(1)); ok {
			L.Push(r.RawGet(L.CheckAny(2)))
			return 1
		}
		return orig(L)
	})
	wrapG("next", func(L *lua.LState, orig lua.LGFunction) int {
		if r, ok := sb.isProxy(L.CheckTable(1)); ok {
			L.Replace(1, r)
		}
		return orig(L)
	})
	next := g.RawGetString("next")
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(next)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	if tab, ok := sb.real[g.RawGetString("table").(*lua.LTable)]; ok {
		orig := tab.RawGetString("insert").(*lua.LFunction).GFunction
		tab.RawSetString("insert", L.NewFunction(func(L *lua.LState) int {
			if _, ok := sb.isProxy(L.CheckTable(1)); ok {
				raise(L, false)
			}
			return orig(L)
		}))
	}
}
