package fakeserver

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Limits on single built-ins. The time limit (ScriptKillAfter) and the heap
// watcher act between Lua instructions, so one call of a built-in that runs
// long or allocates much in Go escaped them: a 44-byte pattern kept a node
// busy 19 s, one table.concat killed the process with a fatal out-of-memory.
// These wrappers check, before the built-in runs, what it may cost, and fail
// the script with a Lua error (the node and the process go on):
//
//   - string.find, match, gmatch and gsub: the worst-case steps of the
//     pattern on the subject (backtracking multiplies: each quantified item
//     that something after it can make fail may be tried at every length;
//     an unanchored pattern at every start) must stay under maxScriptSteps;
//   - gsub: its result must stay under maxScriptString, and gopher-lua
//     rebuilds the result once per match (matches x result bytes), which
//     counts against maxScriptSteps; a table or function replacement is
//     checked as it returns values;
//   - table.concat: native (tableConcat), bounded as it builds;
//   - string.format: widths and precisions over 99 are refused, as in
//     Lua 5.1 (Go's fmt pads up to a million per verb), and the result's
//     length is bounded first;
//   - string.rep: maxScriptString (lua.go);
//   - unpack and string.byte: as in Lua 5.1, their results must fit the C
//     stack of LUAI_MAXCSTACK (8000) slots, arguments included ("too many
//     results to unpack", "stack overflow (string slice too long)", Redis's
//     texts). gopher-lua grows its stack 32 slots at a time, so without the
//     check unpack({},1,400000) took 36 s, one call, beyond ScriptKillAfter
//     and SCRIPT KILL (issue 34 R9).
//
// The `..` operator is one instruction: a loop that doubles a string is
// stopped by the heap watcher (maxScriptHeap, sampled every millisecond)
// after the instruction that passed it, so it peaks at about three times
// maxScriptHeap.
const maxScriptSteps = 1e8

// patternSteps estimates the worst-case steps of matching Lua pattern p
// against n bytes (Lua 5.1 patterns: no alternation, so backtracking comes
// from quantifiers alone).
func patternSteps(p string, n int) float64 {
	fn := float64(n + 1)
	steps := fn // tried at every start
	i := 0
	if strings.HasPrefix(p, "^") {
		steps, i = 1, 1
	}
	for i < len(p) {
		single := true // the item matches one byte (can be quantified)
		switch p[i] {
		case '(', ')':
			i++
			continue
		case '%':
			switch {
			case i+1 < len(p) && p[i+1] == 'b': // balanced match: scans up to n
				steps *= fn
				i += 4
				continue
			case i+1 < len(p) && p[i+1] == 'f': // frontier: a set, matches no byte
				i = skipSet(p, i+2)
				continue
			case i+1 < len(p) && p[i+1] >= '0' && p[i+1] <= '9': // back reference
				// Compares the capture, up to n bytes, at every try:
				// "(.-)%1b" on 9,000 bytes held a node for over a minute.
				steps *= fn
				single = false
			}
			i += 2
		case '[':
			i = skipSet(p, i)
		default:
			i++
		}
		if !single || i >= len(p) {
			continue
		}
		switch p[i] {
		case '*', '+', '-':
			i++
			if !onlyClose(p[i:]) {
				steps *= fn // a later item can fail: every length is tried
			}
		case '?':
			i++
			steps *= 2
		}
	}
	return steps
}

// skipSet returns the index after the set [...] starting at p[i] ('[').
func skipSet(p string, i int) int {
	i++
	if i < len(p) && p[i] == '^' {
		i++
	}
	first := true
	for i < len(p) && (first || p[i] != ']') {
		if p[i] == '%' {
			i++
		}
		i++
		first = false
	}
	return i + 1
}

// onlyClose reports whether rest holds nothing that can fail: only ')'.
func onlyClose(rest string) bool { return strings.Trim(rest, ")") == "" }

// limitBuiltins wraps the built-ins above in L's string and table
// libraries.
func limitBuiltins(L *lua.LState) {
	g := L.G.Global
	str, _ := g.RawGetString("string").(*lua.LTable)
	tab, _ := g.RawGetString("table").(*lua.LTable)
	if str == nil || tab == nil {
		return
	}
	wrap := func(t *lua.LTable, name string, check func(L *lua.LState, orig lua.LGFunction) int) {
		orig, ok := t.RawGetString(name).(*lua.LFunction)
		if !ok || orig.GFunction == nil {
			return
		}
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return check(L, orig.GFunction) }))
	}
	pattern := func(plainArg int) func(L *lua.LState, orig lua.LGFunction) int {
		return func(L *lua.LState, orig lua.LGFunction) int {
			s, p := L.CheckString(1), L.CheckString(2)
			if plainArg == 0 || !lua.LVAsBool(L.Get(plainArg)) {
				checkPattern(L, p, len(s))
			}
			return orig(L)
		}
	}
	wrap(str, "find", pattern(4))
	wrap(str, "match", pattern(0))
	wrap(str, "gmatch", pattern(0))
	wrap(str, "gsub", gsubLimited)
	wrap(str, "format", func(L *lua.LState, orig lua.LGFunction) int {
		checkFormat(L, L.CheckString(1))
		return orig(L)
	})
	wrap(g, "unpack", func(L *lua.LState, orig lua.LGFunction) int {
		t := L.CheckTable(1)
		i := int64(L.OptInt(2, 1))
		j := int64(t.Len())
		if L.Get(3) != lua.LNil {
			j = int64(L.CheckInt(3))
		}
		if i <= j && !stackRoom(L, j-i+1) {
			luaRaiseWhere(L, "too many results to unpack")
		}
		return orig(L)
	})
	wrap(str, "byte", func(L *lua.LState, orig lua.LGFunction) int {
		// Lua 5.1's str_byte: positions relative to the end, clamped
		l := int64(len(L.CheckString(1)))
		rel := func(pos int64) int64 {
			if pos < 0 {
				pos += l + 1
			}
			return max(pos, 0)
		}
		posi := rel(int64(L.OptInt(2, 1)))
		pose := posi
		if L.Get(3) != lua.LNil {
			pose = rel(int64(L.CheckInt(3)))
		}
		posi, pose = max(posi, 1), min(pose, l)
		if posi <= pose && !stackRoom(L, pose-posi+1) {
			luaRaiseWhere(L, "stack overflow (string slice too long)")
		}
		return orig(L)
	})
	tab.RawSetString("concat", L.NewFunction(tableConcat))
}

// tableConcat is Lua 5.1's table.concat(t [, sep [, i [, j]]]), native:
// gopher-lua's pushes every element onto the Lua stack, which it grows 32
// slots at a time with a full copy each, so 80,000 elements took 9 s and a
// million held a node BUSY for many minutes, one call that neither
// ScriptKillAfter nor SCRIPT KILL could stop. Elements are strings or
// numbers (converted as the fake converts numbers elsewhere); any other
// value in [i, j], a missing one included, fails with Redis's "invalid
// value (<type>) at index N in table for 'concat'". The result is bounded by
// maxScriptString and the script's kill (SCRIPT KILL, ScriptKillAfter, the
// heap watcher) is honoured as it is built.
func tableConcat(L *lua.LState) int {
	sep := ""
	if L.Get(2) != lua.LNil {
		sep = L.CheckString(2)
	}
	t := L.CheckTable(1)
	i := L.OptInt(3, 1)
	last := t.Len()
	if L.Get(4) != lua.LNil {
		last = L.CheckInt(4)
	}
	var done <-chan struct{}
	if ctx := L.Context(); ctx != nil {
		done = ctx.Done()
	}
	elem := func(k int) string {
		switch v := t.RawGet(lua.LNumber(k)).(type) {
		case lua.LString:
			return string(v)
		case lua.LNumber:
			return v.String()
		default:
			luaRaiseWhere(L, "invalid value ("+v.Type().String()+") at index "+strconv.Itoa(k)+" in table for 'concat'")
			return ""
		}
	}
	checkKill := func(k int) {
		if k&1023 == 0 && done != nil {
			select {
			case <-done:
				luaRaiseWhere(L, "script killed")
			default:
			}
		}
	}
	// Measure first, in the order Lua would meet each error, then build at
	// the final size: a builder grown by appending leaves ~4x its final
	// size in garbage, which the heap watcher counts (a 64 MB-bounded
	// concat once tripped the 256 MB script budget).
	size := 0
	for k := i; k <= last; k++ {
		size += len(elem(k))
		if k < last {
			size += len(sep)
		}
		if size > maxScriptString {
			luaRaiseWhere(L, "resulting string too large")
		}
		checkKill(k)
	}
	var b strings.Builder
	b.Grow(size)
	for k := i; k <= last; k++ {
		b.WriteString(elem(k))
		if k < last {
			b.WriteString(sep)
		}
		checkKill(k)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: the most stack slots a
// built-in may use, its arguments included.
const luaMaxCStack = 8000

// stackRoom reports whether a built-in called with L's arguments may push n
// results (Lua 5.1's lua_checkstack).
func stackRoom(L *lua.LState, n int64) bool {
	return int64(L.GetTop())+n <= luaMaxCStack
}

func checkPattern(L *lua.LState, p string, n int) {
	if patternSteps(p, n) > maxScriptSteps {
		luaRaiseWhere(L, "pattern too complex for a subject of this length (fake server step limit)")
	}
}

// gsubLimited is string.gsub with the limits above.
func gsubLimited(L *lua.LState, orig lua.LGFunction) int {
	s, p := L.CheckString(1), L.CheckString(2)
	n := len(s)
	checkPattern(L, p, n)
	m := n + 1 // matches, at most
	if lim := L.OptInt(4, -1); lim >= 0 {
		m = min(m, lim)
	}
	tooBig := func(out int) {
		if out > maxScriptString {
			luaRaiseWhere(L, "resulting string too large")
		}
		if float64(m)*float64(n+out) > maxScriptSteps {
			luaRaiseWhere(L, "gsub result too costly to build (fake server step limit)")
		}
	}
	switch r := L.Get(3).(type) {
	case lua.LString:
		// Each match adds repl's bytes; each capture reference in repl at
		// most the subject's (matches do not overlap).
		refs := strings.Count(string(r), "%")
		tooBig(n + m*len(r) + refs*n)
	case lua.LNumber:
		tooBig(n + m*len(lua.LVAsString(r)))
	case *lua.LTable, *lua.LFunction:
		// Checked as the replacements come: count them and their bytes.
		out, calls := n, 0
		L.Replace(3, L.NewFunction(func(L *lua.LState) int {
			var v lua.LValue
			if t, ok := r.(*lua.LTable); ok {
				v = L.GetTable(t, L.Get(1))
			} else {
				top := L.GetTop()
				L.Push(r)
				for k := 1; k <= top; k++ {
					L.Push(L.Get(k))
				}
				L.Call(top, 1)
				v = L.Get(-1)
				L.Pop(1)
			}
			calls++
			out += len(lua.LVAsString(v))
			if out > maxScriptString || float64(calls)*float64(n+out) > maxScriptSteps {
				luaRaiseWhere(L, "resulting string too large")
			}
			L.Push(v)
			return 1
		}))
	}
	return orig(L)
}

// checkFormat refuses a string.format whose width or precision has more
// than two digits (Lua 5.1's rule) or whose result could pass
// maxScriptString: the format, each verb's width and precision, and each
// argument's string form.
func checkFormat(L *lua.LState, f string) {
	total, arg := len(f), 2
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		for _, part := range [2]bool{false, true} {
			if part {
				if i >= len(f) || f[i] != '.' {
					break
				}
				i++
			}
			digits, w := 0, 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				w = w*10 + int(f[i]-'0')
				digits++
				i++
				if digits > 2 {
					luaRaiseWhere(L, "invalid format (width or precision too long)")
				}
			}
			total += w
		}
		if arg <= L.GetTop() {
			total += len(lua.LVAsString(L.Get(arg))) + 24 // a number's digits
		}
		arg++
		if total > maxScriptString {
			luaRaiseWhere(L, "resulting string too large")
		}
	}
}
