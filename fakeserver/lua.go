package fakeserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
	lua "github.com/yuin/gopher-lua"
)

// Lua scripting: EVAL, EVALSHA and SCRIPT run arbitrary scripts in
// github.com/yuin/gopher-lua (Lua 5.1, as Redis). A node has one Lua state,
// created on first use and used only with n.mu held, so a script runs
// atomically: no other command of the node runs until it returns.
//
// Deviations from Redis, by necessity: gopher-lua's compile and runtime
// error messages are worded differently from PUC Lua's (the reply's frame
// -- "ERR user_script:<line>: ... script: <sha>, on @user_script:<line>." --
// is Redis's); the struct, cjson, cmsgpack and bit libraries are absent.

// Script time limits. Like Redis's busy-reply-threshold, once a script has
// run for ScriptBusyAfter other clients get a BUSY error (SCRIPT KILL stops a
// script that has not written). Unlike Redis, the fake never hangs: a script
// still running after ScriptKillAfter is stopped whatever it did.
const (
	DefaultScriptBusyAfter = 5 * time.Second
	DefaultScriptKillAfter = 10 * time.Second
)

// Script memory bounds: a script whose heap growth passes maxScriptHeap is
// stopped (the node samples the Go heap every millisecond while a script
// runs), and string.rep, string.gsub and table.concat refuse results over
// maxScriptString (lualimits.go).
const (
	maxScriptHeap   = 256 << 20
	maxScriptString = 64 << 20
)

const (
	busyErr       = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	killedByUser  = "ERR Script killed by user with SCRIPT KILL..."
	unkillableErr = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
)

// scriptEngine is a node's Lua state and the state of the running script.
type scriptEngine struct {
	L      *lua.LState
	funcs  map[string]*lua.LFunction // compiled scripts by SHA
	keys   *lua.LTable
	argv   *lua.LTable
	sc     *fconn  // the script's pseudo client
	out    capConn // its reply buffer
	caller *fconn  // the connection running the script
	wrote  bool    // the running script executed a write command
	line   int     // line of the last error() call
	busy   atomic.Bool
	kill   atomic.Pointer[scriptKill]
	// busyMu orders a run's end (endRun) against its busy timer (markBusy),
	// so that a timer whose Stop came too late cannot mark the node busy
	// after the script has ended.
	busyMu sync.Mutex
}

// markBusy: the script run k has run for ScriptBusyAfter, so other clients
// get BUSY; nothing once k has ended (its timer fired as it ended, on a
// loaded machine up to hundreds of milliseconds late).
func (e *scriptEngine) markBusy(k *scriptKill) {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	if e.kill.Load() == k {
		e.busy.Store(true)
	}
}

// endRun ends the running script's state: no kill target, not busy.
func (e *scriptEngine) endRun() {
	e.busyMu.Lock()
	defer e.busyMu.Unlock()
	e.kill.Store(nil)
	e.busy.Store(false)
}

type scriptKill struct {
	cancel context.CancelFunc
	reason atomic.Value // string: the error text the script dies with
	wrote  *atomic.Bool
}

// capConn records the RESP2 replies of commands run by redis.call.
type capConn struct {
	redcon.Conn // nil: only the write methods below are used
	b           []byte
}

func (w *capConn) WriteError(s string)      { w.b = redcon.AppendError(w.b, s) }
func (w *capConn) WriteString(s string)     { w.b = redcon.AppendString(w.b, s) }
func (w *capConn) WriteBulk(b []byte)       { w.b = redcon.AppendBulk(w.b, b) }
func (w *capConn) WriteBulkString(s string) { w.b = redcon.AppendBulkString(w.b, s) }
func (w *capConn) WriteInt(v int)           { w.b = redcon.AppendInt(w.b, int64(v)) }
func (w *capConn) WriteInt64(v int64)       { w.b = redcon.AppendInt(w.b, v) }
func (w *capConn) WriteUint64(v uint64)     { w.b = redcon.AppendUint(w.b, v) }
func (w *capConn) WriteArray(n int)         { w.b = redcon.AppendArray(w.b, n) }
func (w *capConn) WriteNull()               { w.b = redcon.AppendNull(w.b) }
func (w *capConn) WriteRaw(b []byte)        { w.b = append(w.b, b...) }
func (w *capConn) Close() error             { return nil }
func (w *capConn) Context() interface{}     { return nil }
func (w *capConn) SetContext(interface{})   {}

// luaState returns the node's Lua state, creating it. Callers hold n.mu.
func (n *Node) luaState() *scriptEngine {
	e := &n.lua
	if e.L != nil {
		return e
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, RegistrySize: 1024, RegistryMaxSize: 1 << 20})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
			x, k := L.CheckString(1), L.CheckInt(2)
			if k > 0 && len(x) > 0 && k > maxScriptString/len(x) {
				luaRaiseWhere(L, "resulting string too large")
			}
			L.Push(lua.LString(strings.Repeat(x, max(k, 0))))
			return 1
		}))
	}
	limitBuiltins(L)
	fixBase(L) // luabase.go
	for _, name := range []string{"dofile", "loadfile", "loadstring", "load", "module", "require", "newproxy", "collectgarbage", "print", "_printregs"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("error", L.NewFunction(func(L *lua.LState) int {
		e.line = callerLine(L)
		L.Error(L.Get(1), L.OptInt(2, 1))
		return 0
	}))
	r := L.NewTable()
	L.SetFuncs(r, map[string]lua.LGFunction{
		"call":        func(L *lua.LState) int { return n.luaCall(L, true) },
		"pcall":       func(L *lua.LState) int { return n.luaCall(L, false) },
		"error_reply": luaErrorReply,
		"status_reply": func(L *lua.LState) int {
			t := L.NewTable()
			t.RawSetString("ok", lua.LString(L.CheckString(1)))
			L.Push(t)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			L.Push(lua.LString(sha1Hex([]byte(L.CheckString(1)))))
			return 1
		},
		"log":                func(L *lua.LState) int { return 0 },
		"set_repl":           func(L *lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"setresp": func(L *lua.LState) int {
			if v := L.CheckInt(1); v != 2 {
				luaRaise(L, "ERR fake server: redis.setresp(3) is not supported (replies are RESP2 inside scripts)")
			}
			return 0
		},
	})
	for k, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(k, lua.LNumber(v))
	}
	r.RawSetString("REDIS_VERSION", lua.LString(Version)) // as INFO's redis_version
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	g.RawSetString("redis", r)
	e.keys, e.argv = L.NewTable(), L.NewTable()
	g.RawSetString("KEYS", e.keys)
	g.RawSetString("ARGV", e.argv)
	// globals are read-only and must exist, as in Redis 7
	mt := L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		luaRaiseWhere(L, "Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		if L.ToString(2) == "loadstring" { // removed, but reads as nil (Redis 7)
			L.Push(lua.LNil)
			return 1
		}
		luaRaiseWhere(L, "Script attempted to access nonexistent global variable '"+L.ToString(2)+"'")
		return 0
	}))
	L.SetMetatable(g, mt)
	e.protectSandbox(L) // read-only at every level (luasandbox.go)
	e.L = L
	e.funcs = map[string]*lua.LFunction{}
	e.sc = &fconn{node: n, proto: 2, authed: true, user: "default"}
	return e
}

// resetLua drops the Lua state (SCRIPT FLUSH, restart with data loss).
// Callers hold n.mu.
func (n *Node) resetLua() {
	if n.lua.L != nil {
		n.lua.L.Close()
	}
	n.lua.L = nil
	n.lua.funcs = nil
}

// callerLine is the current line of the Lua function that called the
// running Go function, or 0.
func callerLine(L *lua.LState) int {
	for lvl := 1; lvl < 4; lvl++ {
		dbg, ok := L.GetStack(lvl)
		if !ok {
			return 0
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			return dbg.CurrentLine
		}
	}
	return 0
}

// luaRaise raises an error table {err=msg} with the caller's line, as
// Redis's luaPushError does.
func luaRaise(L *lua.LState, msg string) {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	t.RawSetString("line", lua.LNumber(callerLine(L)))
	L.Error(t, 0)
}

// luaRaiseWhere raises a string error prefixed with the caller's position.
func luaRaiseWhere(L *lua.LState, msg string) {
	L.Error(lua.LString("user_script:"+strconv.Itoa(callerLine(L))+": "+msg), 0)
}

// luaErrorReply is redis.error_reply: "-CODE msg" or "msg" (code ERR).
func luaErrorReply(L *lua.LState) int {
	s := L.CheckString(1)
	t := L.NewTable()
	t.RawSetString("err", lua.LString(errorTableText("-"+strings.TrimPrefix(s, "-"))))
	L.Push(t)
	return 1
}

// errorTableText turns a RESP error line ("-CODE msg") into the text of a
// Lua error table ("CODE msg"), as Redis's luaPushErrorBuff.
func errorTableText(s string) string {
	s = strings.TrimPrefix(s, "-")
	code, msg := "ERR", s
	if i := strings.IndexByte(s, ' '); i >= 0 {
		code, msg = s[:i], s[i+1:]
	}
	return code + " " + strings.TrimRight(msg, "\r\n")
}

// luaCall is redis.call (raise=true) and redis.pcall.
func (n *Node) luaCall(L *lua.LState, raise bool) int {
	e := &n.lua
	argc := L.GetTop()
	fail := func(msg string) int {
		if raise {
			luaRaise(L, msg)
			return 0
		}
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		L.Push(t)
		return 1
	}
	if argc == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, argc)
	for i := 1; i <= argc; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(string(v))
		case lua.LNumber:
			args[i-1] = []byte(luaNumberString(float64(v)))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	idx := lookupCmd(args[0])
	if idx < 0 || (commandTable[idx].admin && n.cfg.DisableAdmin) {
		return fail("ERR Unknown Redis command called from script")
	}
	def := &commandTable[idx]
	if def.noscript || def.admin {
		return fail("ERR This Redis command is not allowed from script")
	}
	if !arityOK(def.arity, argc) {
		return fail("ERR Wrong number of args calling Redis command from script")
	}
	if n.slotRefusal(def, args) != "" {
		// a cluster node: a key of a slot it does not serve, or keys of
		// several slots in one command (slots.go), as Redis 7.0
		return fail("ERR Script attempted to access a non local key in a cluster node")
	}
	if def.write {
		e.wrote = true
		if k := e.kill.Load(); k != nil {
			k.wrote.Store(true)
		}
	}
	n.stats.commands.Add(1)
	n.cmdStats[idx].calls.Add(1)
	e.out.b = e.out.b[:0]
	def.fn(n, cmdCtx{rc: &e.out, fc: e.sc, args: args, idx: idx, held: true})
	v, _, isErr := respToLua(L, e.out.b)
	if isErr {
		msg := string(v.(*lua.LTable).RawGetString("err").(lua.LString))
		return fail(msg)
	}
	L.Push(v)
	return 1
}

// luaNumberString formats a Lua number argument as Redis does (%.17g,
// shortest form).
func luaNumberString(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// respToLua converts one RESP2 reply to a Lua value with Redis's rules:
// integer -> number, bulk -> string, nil -> false, array -> table, status
// -> {ok=...}, error -> {err=...}. isErr reports a top-level error.
func respToLua(L *lua.LState, b []byte) (v lua.LValue, rest []byte, isErr bool) {
	if len(b) < 3 {
		return lua.LFalse, nil, false
	}
	end := strings.Index(string(b), "\r\n")
	line, rest := string(b[1:end]), b[end+2:]
	switch b[0] {
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, rest, false
	case '-':
		t := L.NewTable()
		t.RawSetString("err", lua.LString(errorTableText(line)))
		return t, rest, true
	case ':':
		i, _ := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(i), rest, false
	case '$':
		k, _ := strconv.Atoi(line)
		if k < 0 {
			return lua.LFalse, rest, false
		}
		return lua.LString(rest[:k]), rest[k+2:], false
	case '*':
		k, _ := strconv.Atoi(line)
		if k < 0 {
			return lua.LFalse, rest, false
		}
		t := L.CreateTable(k, 0)
		for i := 1; i <= k; i++ {
			var x lua.LValue
			x, rest, _ = respToLua(L, rest)
			t.RawSetInt(i, x)
		}
		return t, rest, false
	}
	return lua.LFalse, nil, false
}

// writeLuaReply writes a script's return value to the client with Redis's
// rules: number -> integer (truncated), string -> bulk, true -> 1, false and
// nil -> null, {err=} -> error, {ok=} -> status, other tables -> array up to
// the first nil.
func writeLuaReply(c cmdCtx, v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LNumber:
		c.rc.WriteInt64(luaToInt(float64(x)))
	case lua.LString:
		c.rc.WriteBulkString(string(x))
	case lua.LBool:
		if x {
			c.rc.WriteInt(1)
		} else {
			c.null()
		}
	case *lua.LTable:
		if s, ok := x.RawGetString("err").(lua.LString); ok {
			c.rc.WriteRaw([]byte("-" + sanitizeLine(string(s)) + "\r\n"))
			return
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			c.rc.WriteString(sanitizeLine(string(s)))
			return
		}
		if depth > 100 {
			c.rc.WriteError("ERR reached lua stack limit")
			return
		}
		k := 0
		for x.RawGetInt(k+1) != lua.LNil {
			k++
		}
		c.rc.WriteArray(k)
		for i := 1; i <= k; i++ {
			writeLuaReply(c, x.RawGetInt(i), depth+1)
		}
	default:
		c.null()
	}
}

func sanitizeLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// luaToInt is C's (long long) cast of a double on amd64: NaN and values out
// of range give the minimum int64.
func luaToInt(f float64) int64 {
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

var syntaxLineRE = regexp.MustCompile(`line:(\d+)`)

// compileScript compiles body under its SHA, replying Redis's compile
// error on failure. Callers hold n.mu.
func (n *Node) compileScript(c cmdCtx, sha string, body []byte) (*lua.LFunction, bool) {
	e := n.luaState()
	if f, ok := e.funcs[sha]; ok {
		return f, true
	}
	f, err := e.L.Load(strings.NewReader(string(body)), "user_script")
	if err != nil {
		msg := err.Error()
		line := "1"
		if m := syntaxLineRE.FindStringSubmatch(msg); m != nil {
			line = m[1]
		}
		var ae *lua.ApiError
		if errors.As(err, &ae) && ae.Cause != nil {
			msg = ae.Cause.Error()
		}
		msg = sanitizeLine(strings.TrimSpace(msg))
		c.err("ERR Error compiling script (new function): user_script:" + line + ": " + msg)
		return nil, false
	}
	e.funcs[sha] = f
	n.scripts[sha] = string(body)
	return f, true
}

// runScript runs a compiled script and writes its reply. Callers hold
// n.mu.
func (n *Node) runScript(c cmdCtx, sha string, f *lua.LFunction, keys, argv [][]byte) {
	e := n.luaState()
	L := e.L
	// fresh tables each run, as Redis: a script may write to KEYS and
	// ARGV or give them a metatable, and the next script must not see it
	e.keys, e.argv = argTable(L, keys), argTable(L, argv)
	L.G.Global.RawSetString("KEYS", e.keys)
	L.G.Global.RawSetString("ARGV", e.argv)
	e.sc.db = c.fc.db
	e.caller = c.fc
	e.wrote = false
	e.line = 0
	ctx, cancel := context.WithCancel(context.Background())
	k := &scriptKill{cancel: cancel, wrote: new(atomic.Bool)}
	k.reason.Store(killedByUser)
	e.kill.Store(k)
	busyAfter, killAfter := n.cfg.ScriptBusyAfter, n.cfg.ScriptKillAfter
	busyT := time.AfterFunc(busyAfter, func() { e.markBusy(k) })
	watchStop := make(chan struct{})
	// The heap is measured from the script's start, though the watcher
	// starts only if the script runs 20ms: a base taken then (a loaded
	// machine can fire the timer late, with a doubling string already at
	// hundreds of MB) let the heap grow 6.7x the budget in one CI run.
	heapBase := heapObjects()
	watchT := time.AfterFunc(20*time.Millisecond, func() { watchHeap(k, watchStop, heapBase) })
	killT := time.AfterFunc(killAfter, func() {
		k.reason.Store(fmt.Sprintf("ERR fake server: script killed after running for %v (Config.ScriptKillAfter)", killAfter))
		cancel()
	})
	L.SetContext(ctx)
	L.Push(f)
	err := L.PCall(0, 1, nil)
	busyT.Stop()
	killT.Stop()
	watchT.Stop()
	close(watchStop)
	killed := ctx.Err() != nil
	L.RemoveContext()
	cancel()
	e.endRun()
	if err != nil {
		L.SetTop(0)
		n.replyScriptError(c, sha, err, killed, k)
		return
	}
	v := L.Get(-1)
	L.Pop(1)
	writeLuaReply(c, v, 0)
}

// heapObjects is the Go heap's live and unswept objects, in bytes.
func heapObjects() uint64 {
	sample := [1]metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample[:])
	return sample[0].Value.Uint64()
}

// watchHeap stops the running script once the Go heap has grown by
// maxScriptHeap since base (taken when the script started); it looks at
// once, then every millisecond.
func watchHeap(k *scriptKill, stop chan struct{}, base uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
		metrics.Read(sample)
		if sample[0].Value.Uint64() > base+maxScriptHeap {
			k.reason.Store(fmt.Sprintf("ERR fake server: script stopped after using more than %d MB of memory", maxScriptHeap>>20))
			k.cancel()
			return
		}
	}
}

func argTable(L *lua.LState, vals [][]byte) *lua.LTable {
	t := L.CreateTable(len(vals), 0)
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

var posRE = regexp.MustCompile(`^user_script:(\d+):`)

// replyScriptError writes a failed script's error in Redis 7's format:
// "-<CODE msg> script: <sha>, on @user_script:<line>."
func (n *Node) replyScriptError(c cmdCtx, sha string, err error, killed bool, k *scriptKill) {
	var msg string
	line := n.lua.line
	var ae *lua.ApiError
	switch {
	case killed:
		msg = k.reason.Load().(string)
		if errors.As(err, &ae) {
			if m := posRE.FindStringSubmatch(lua.LVAsString(ae.Object)); m != nil {
				line, _ = strconv.Atoi(m[1])
			}
		}
	case errors.As(err, &ae):
		switch obj := ae.Object.(type) {
		case *lua.LTable:
			if s, ok := obj.RawGetString("err").(lua.LString); ok {
				msg = string(s)
			} else {
				msg = "ERR unknown error"
			}
			if l, ok := obj.RawGetString("line").(lua.LNumber); ok && l > 0 {
				line = int(l)
			}
		case lua.LString:
			s := string(obj)
			if m := posRE.FindStringSubmatch(s); m != nil {
				line, _ = strconv.Atoi(m[1])
			}
			if i := strings.Index(s, "\nstack traceback:"); i >= 0 {
				s = s[:i]
			}
			msg = "ERR " + s
		default:
			msg = "ERR " + lua.LVAsString(ae.Object)
			if ae.Object == lua.LNil {
				msg = "ERR nil"
			}
		}
	default:
		msg = "ERR " + err.Error()
	}
	if line <= 0 {
		line = 1
	}
	c.fc.node.cmdStats[c.idx].failed.Add(1)
	c.rc.WriteRaw([]byte("-" + sanitizeLine(msg) + " script: " + sha + ", on @user_script:" + strconv.Itoa(line) + ".\r\n"))
}

// scriptKillCmd is SCRIPT KILL while a script runs (dispatch calls it
// without n.mu, which the script holds).
func (n *Node) scriptKillCmd(c cmdCtx) {
	k := n.lua.kill.Load()
	if k == nil || !n.lua.busy.Load() {
		c.err("NOTBUSY No scripts in execution right now.")
		return
	}
	if k.wrote.Load() {
		c.err(unkillableErr)
		return
	}
	k.cancel()
	c.ok()
}
