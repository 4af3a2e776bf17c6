package fakeserver

import (
	"strconv"
	"sync/atomic"

	"github.com/tidwall/redcon"
)

// cmdCtx is what a command implementation sees. It is passed by value so
// dispatch does not allocate.
type cmdCtx struct {
	rc   redcon.Conn
	fc   *fconn
	args [][]byte
	idx  int
	held bool // the caller holds n.mu (EXEC, a script)
}

type cmdDef struct {
	name    string
	arity   int
	flags   []string // COMMAND INFO's flags; write, noscript, allow_busy, no_auth and admin also steer dispatch
	first   int
	last    int
	step    int
	noLock  bool // runs without n.mu: touches neither the keyspace nor scripts
	noMulti bool // runs at once inside MULTI instead of being queued
	fn      func(n *Node, c cmdCtx)

	// derived in init from flags
	write     bool // flag "write"
	noscript  bool // flag "noscript": refused by redis.call
	allowBusy bool // flag "allow_busy": served while a script is busy
	noAuth    bool // flag "no_auth": allowed before AUTH
	admin     bool // flag "admin": the FAKE command (off with Config.DisableAdmin)
}

type cmdCounter struct {
	calls, failed, rejected atomic.Int64
}

var (
	commandTable []cmdDef
	commandIndex map[string]int
	scriptIdx    int // SCRIPT (KILL is served while a script is busy)
)

func init() {
	w := []string{"write", "denyoom"}
	wf := []string{"write", "denyoom", "fast"}
	ro := []string{"readonly", "fast"}
	key1 := func(d cmdDef) cmdDef { d.first, d.last, d.step = 1, 1, 1; return d }
	keysAll := func(d cmdDef) cmdDef { d.first, d.last, d.step = 1, -1, 1; return d }
	commandTable = []cmdDef{
		{name: "ping", arity: -1, flags: []string{"fast", "sentinel"}, noLock: true, fn: cmdPing},
		{name: "echo", arity: 2, flags: []string{"fast"}, noLock: true, fn: cmdEcho},
		{name: "hello", arity: -1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "sentinel", "allow_busy"}, noLock: true, fn: cmdHello},
		{name: "auth", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "sentinel", "allow_busy"}, noLock: true, fn: cmdAuth},
		{name: "select", arity: 2, flags: []string{"loading", "stale", "fast"}, noLock: true, fn: cmdSelect},
		{name: "client", arity: -2, flags: []string{"noscript", "sentinel"}, noLock: true, fn: cmdClient},
		{name: "command", arity: -1, flags: []string{"loading", "stale", "sentinel"}, noLock: true, fn: cmdCommand},
		{name: "info", arity: -1, flags: []string{"loading", "stale", "sentinel"}, fn: cmdInfo},
		{name: "config", arity: -2, flags: []string{"noscript"}, noLock: true, fn: cmdConfig},
		{name: "quit", arity: -1, flags: []string{"allow_busy", "noscript", "loading", "stale", "fast", "no_auth"}, noLock: true, noMulti: true, fn: cmdQuit},
		key1(cmdDef{name: "set", arity: -3, flags: w, fn: cmdSet}),
		key1(cmdDef{name: "get", arity: 2, flags: ro, fn: cmdGet}),
		key1(cmdDef{name: "getrange", arity: 4, flags: []string{"readonly"}, fn: cmdGetRange}),
		key1(cmdDef{name: "strlen", arity: 2, flags: ro, fn: cmdStrLen}),
		keysAll(cmdDef{name: "mget", arity: -2, flags: ro, fn: cmdMGet}),
		key1(cmdDef{name: "setnx", arity: 3, flags: wf, fn: cmdSetNX}),
		key1(cmdDef{name: "getdel", arity: 2, flags: []string{"write", "fast"}, fn: cmdGetDel}),
		keysAll(cmdDef{name: "del", arity: -2, flags: []string{"write"}, fn: cmdDel}),
		keysAll(cmdDef{name: "unlink", arity: -2, flags: []string{"write", "fast"}, fn: cmdDel}),
		keysAll(cmdDef{name: "exists", arity: -2, flags: ro, fn: cmdExists}),
		key1(cmdDef{name: "incr", arity: 2, flags: wf, fn: cmdIncr}),
		key1(cmdDef{name: "decr", arity: 2, flags: wf, fn: cmdDecr}),
		key1(cmdDef{name: "incrby", arity: 3, flags: wf, fn: cmdIncrBy}),
		key1(cmdDef{name: "decrby", arity: 3, flags: wf, fn: cmdDecrBy}),
		key1(cmdDef{name: "pexpire", arity: -3, flags: []string{"write", "fast"}, fn: cmdPexpire}),
		key1(cmdDef{name: "expire", arity: -3, flags: []string{"write", "fast"}, fn: cmdExpire}),
		key1(cmdDef{name: "pexpireat", arity: -3, flags: []string{"write", "fast"}, fn: cmdPexpireAt}),
		key1(cmdDef{name: "expireat", arity: -3, flags: []string{"write", "fast"}, fn: cmdExpireAt}),
		key1(cmdDef{name: "persist", arity: 2, flags: []string{"write", "fast"}, fn: cmdPersist}),
		key1(cmdDef{name: "pttl", arity: 2, flags: ro, fn: cmdPttl}),
		key1(cmdDef{name: "ttl", arity: 2, flags: ro, fn: cmdTTL}),
		key1(cmdDef{name: "type", arity: 2, flags: ro, fn: cmdType}),
		{name: "keys", arity: 2, flags: []string{"readonly"}, fn: cmdKeys},
		{name: "scan", arity: -2, flags: []string{"readonly"}, fn: cmdScan},
		{name: "dbsize", arity: 1, flags: ro, fn: cmdDBSize},
		{name: "flushall", arity: -1, flags: []string{"write"}, fn: cmdFlushAll},
		{name: "flushdb", arity: -1, flags: []string{"write"}, fn: cmdFlushDB},
		key1(cmdDef{name: "hset", arity: -4, flags: wf, fn: cmdHSet}),
		key1(cmdDef{name: "hmset", arity: -4, flags: wf, fn: cmdHSet}),
		key1(cmdDef{name: "hsetnx", arity: 4, flags: wf, fn: cmdHSetNX}),
		key1(cmdDef{name: "hget", arity: 3, flags: ro, fn: cmdHGet}),
		key1(cmdDef{name: "hmget", arity: -3, flags: ro, fn: cmdHMGet}),
		key1(cmdDef{name: "hdel", arity: -3, flags: []string{"write", "fast"}, fn: cmdHDel}),
		key1(cmdDef{name: "hgetall", arity: 2, flags: []string{"readonly"}, fn: cmdHGetAll}),
		key1(cmdDef{name: "hkeys", arity: 2, flags: []string{"readonly"}, fn: cmdHKeys}),
		key1(cmdDef{name: "hvals", arity: 2, flags: []string{"readonly"}, fn: cmdHVals}),
		key1(cmdDef{name: "hlen", arity: 2, flags: ro, fn: cmdHLen}),
		key1(cmdDef{name: "hexists", arity: 3, flags: ro, fn: cmdHExists}),
		key1(cmdDef{name: "hincrby", arity: 4, flags: wf, fn: cmdHIncrBy}),
		key1(cmdDef{name: "lpush", arity: -3, flags: wf, fn: cmdLPush}),
		key1(cmdDef{name: "rpush", arity: -3, flags: wf, fn: cmdRPush}),
		key1(cmdDef{name: "lpop", arity: -2, flags: []string{"write", "fast"}, fn: cmdLPop}),
		key1(cmdDef{name: "rpop", arity: -2, flags: []string{"write", "fast"}, fn: cmdRPop}),
		key1(cmdDef{name: "llen", arity: 2, flags: ro, fn: cmdLLen}),
		key1(cmdDef{name: "lrange", arity: 4, flags: []string{"readonly"}, fn: cmdLRange}),
		key1(cmdDef{name: "zadd", arity: -4, flags: wf, fn: cmdZAdd}),
		key1(cmdDef{name: "zincrby", arity: 4, flags: wf, fn: cmdZIncrBy}),
		key1(cmdDef{name: "zscore", arity: 3, flags: ro, fn: cmdZScore}),
		key1(cmdDef{name: "zcard", arity: 2, flags: ro, fn: cmdZCard}),
		key1(cmdDef{name: "zrem", arity: -3, flags: []string{"write", "fast"}, fn: cmdZRem}),
		key1(cmdDef{name: "zrange", arity: -4, flags: []string{"readonly"}, fn: cmdZRange}),
		key1(cmdDef{name: "zrevrange", arity: -4, flags: []string{"readonly"}, fn: cmdZRevRange}),
		{name: "publish", arity: 3, flags: []string{"pubsub", "loading", "stale", "fast", "may_replicate"}, noLock: true, fn: cmdPublish},
		{name: "multi", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, noLock: true, noMulti: true, fn: cmdMulti},
		{name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, noLock: true, noMulti: true, fn: cmdExec},
		{name: "discard", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, noLock: true, noMulti: true, fn: cmdDiscard},
		keysAll(cmdDef{name: "watch", arity: -2, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, noMulti: true, fn: cmdWatch}),
		{name: "unwatch", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "allow_busy"}, fn: cmdUnwatch},
		{name: "script", arity: -2, flags: []string{"noscript"}, fn: cmdScript},
		{name: "eval", arity: -3, flags: []string{"noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "movablekeys"}, fn: cmdEval},
		{name: "evalsha", arity: -3, flags: []string{"noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "movablekeys"}, fn: cmdEvalSHA},
		{name: "role", arity: 1, flags: []string{"noscript", "loading", "stale", "fast"}, noLock: true, fn: cmdRole},
		{name: "cluster", arity: -2, flags: []string{"noscript", "loading", "stale"}, noLock: true, fn: cmdCluster},
		{name: "readonly", arity: 1, flags: []string{"loading", "stale", "fast"}, noLock: true, fn: cmdClusterConn},
		{name: "readwrite", arity: 1, flags: []string{"loading", "stale", "fast"}, noLock: true, fn: cmdClusterConn},
		{name: "asking", arity: 1, flags: []string{"fast"}, noLock: true, fn: cmdClusterConn},
		{name: "fake", arity: -2, flags: []string{"admin", "noscript", "loading", "stale"}, noLock: true, noMulti: true, fn: cmdFake},
	}
	defer func() { scriptIdx = commandIndex["script"] }()
	commandIndex = make(map[string]int, len(commandTable))
	for i := range commandTable {
		d := &commandTable[i]
		commandIndex[d.name] = i
		for _, f := range d.flags {
			switch f {
			case "write":
				d.write = true
			case "noscript":
				d.noscript = true
			case "allow_busy":
				d.allowBusy = true
			case "no_auth":
				d.noAuth = true
			case "admin":
				d.admin = true
			}
		}
	}
}

// lookupCmd finds a command by name, case-insensitively, without
// allocating. It returns -1 for unknown names.
func lookupCmd(name []byte) int {
	var buf [16]byte
	if len(name) > len(buf) {
		return -1
	}
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	if i, ok := commandIndex[string(buf[:len(name)])]; ok {
		return i
	}
	return -1
}

var malformedReply = []byte("?fakeserver-malformed-reply\r\n")

// handle runs one command on the connection's redcon goroutine.
func (n *Node) handle(rc redcon.Conn, cmd redcon.Command) {
	fc, _ := rc.Context().(*fconn)
	if fc == nil || len(cmd.Args) == 0 {
		rc.WriteError("ERR fake server: connection without state")
		return
	}
	defer func() {
		if r := recover(); r != nil {
			rc.WriteError("ERR fake server internal error")
			_ = rc.Close()
		}
	}()
	n.dispatch(fc, cmd.Args)
	if fc.outPending > flushAfter {
		// Large replies: send them now (blocking on a client that does not
		// read) rather than buffer a whole pipeline's worth of them.
		if w := redcon.BaseWriter(rc); w != nil {
			_ = w.Flush()
		}
	}
}

func (n *Node) dispatch(fc *fconn, args [][]byte) {
	out := fc.out
	out.drop = false
	n.stats.commands.Add(1)
	idx := lookupCmd(args[0])
	if idx >= 0 && commandTable[idx].admin && n.cfg.DisableAdmin {
		idx = -1
	}
	if idx < 0 || !commandTable[idx].admin {
		// a blackhole holds every non-admin request until Heal
		for g := n.hole.Load(); g != nil; g = n.hole.Load() {
			select {
			case <-g.ch:
			case <-fc.done:
				return
			}
		}
		if !n.beforeExec(fc) { // request delay, partitions (faults.go)
			return
		}
		if takeOne(&n.failN) {
			out.WriteError(*n.failText.Load())
			return
		}
		if takeOne(&n.malformN) {
			out.WriteRaw(malformedReply)
			return
		}
	}
	if idx < 0 {
		fc.multiDirty = fc.inMulti
		out.WriteError(unknownCommandText(args))
		return
	}
	def := &commandTable[idx]
	st := &n.cmdStats[idx]
	st.calls.Add(1)
	if !arityOK(def.arity, len(args)) {
		st.rejected.Add(1)
		msg := "ERR wrong number of arguments for '" + def.name + "' command"
		if def.name == "exec" {
			n.execAbort(fc, msg[len("ERR "):])
			return
		}
		fc.multiDirty = fc.inMulti
		out.WriteError(msg)
		return
	}
	if !fc.authed && !def.noAuth {
		st.rejected.Add(1)
		fc.multiDirty = fc.inMulti
		out.WriteError("NOAUTH Authentication required.")
		return
	}
	c := cmdCtx{rc: out, fc: fc, args: args, idx: idx}
	// While a script is busy, as Redis's processCommand: the check comes
	// before queueing (a queued command gets BUSY and dooms its
	// transaction), and EXEC, with or without MULTI, is aborted. SCRIPT
	// KILL is allow-busy: queued in MULTI, run otherwise (below).
	busy := n.lua.busy.Load() && !def.allowBusy && !def.admin
	isKill := idx == scriptIdx && len(args) == 2 && eqFold(args[1], "kill")
	if busy && !isKill {
		st.rejected.Add(1)
		if def.name == "exec" {
			n.execAbort(fc, busyErr)
			return
		}
		fc.multiDirty = fc.multiDirty || fc.inMulti
		out.WriteError(busyErr)
		return
	}
	if fc.inMulti && !def.noMulti {
		if msg := n.slotRefusal(def, args); msg != "" {
			// refused when queued, as a cluster node does (EXEC then aborts)
			st.rejected.Add(1)
			fc.multiDirty = true
			out.WriteError(msg)
			return
		}
		q := make([][]byte, len(args))
		for i, a := range args {
			q[i] = append([]byte(nil), a...)
		}
		fc.multiQ = append(fc.multiQ, queuedCmd{idx: idx, args: q})
		out.WriteString("QUEUED")
		return
	}
	if busy { // SCRIPT KILL
		n.scriptKillCmd(c)
		return
	}
	if !def.noLock {
		n.mu.Lock()
		// a cluster node's keys in another slot (slots.go), checked
		// under mu: a migration (MoveSlot) holds it
		if msg := n.slotRefusal(def, args); msg != "" {
			n.mu.Unlock()
			st.rejected.Add(1)
			out.WriteError(msg)
			return
		}
		c.held = true
		n.flushPush(fc)
		def.fn(n, c)
		n.mu.Unlock()
		return
	}
	n.flushPush(fc) // EXEC looks again under mu (execLocked)
	def.fn(n, c)
}

// flushPushFrame is CLIENT TRACKING's invalidation of every key.
var flushPushFrame = []byte(">2\r\n$10\r\ninvalidate\r\n_\r\n")

// flushPush writes, ahead of this command's reply, the invalidation of
// every key that Redis sends a tracking RESP3 connection when the data set
// is flushed or replaced (FLUSHALL, FLUSHDB, a full resync: Flush, Resync),
// once per flush since the connection was last told. Redis writes it the
// moment the flush runs; the fake writes it before the connection's next
// reply, which is the same for what a client can tell: every reply made
// after the flush comes after it. A data command runs it under n.mu (the
// flushes bump flushGen under it), so its reply is ordered with them. A
// RESP2 connection's tracking is told nothing, as Redis drops its
// messages without REDIRECT.
func (n *Node) flushPush(fc *fconn) {
	if !fc.tracking || fc.proto != 3 {
		return
	}
	if g := n.flushGen.Load(); g != fc.flushSeen {
		fc.flushSeen = g
		fc.out.WriteRaw(flushPushFrame)
	}
}

func arityOK(arity, argc int) bool {
	if arity >= 0 {
		return argc == arity
	}
	return argc >= -arity
}

func unknownCommandText(args [][]byte) string {
	s := "ERR unknown command '" + trunc(args[0], 128) + "', with args beginning with: "
	var a []byte
	for _, x := range args[1:] {
		if len(a) >= 128 {
			break
		}
		lim := 128 - len(a)
		a = append(a, '\'')
		a = append(a, trunc(x, lim)...)
		a = append(a, '\'', ' ')
	}
	return s + string(a)
}

func trunc(b []byte, n int) string {
	if n < 0 {
		n = 0
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// reply helpers

func (c cmdCtx) err(msg string) {
	c.fc.node.cmdStats[c.idx].failed.Add(1)
	c.rc.WriteError(msg)
}

func (c cmdCtx) ok() { c.rc.WriteString("OK") }

func (c cmdCtx) null() {
	if c.fc.proto == 3 {
		c.rc.WriteRaw(resp3Null)
		return
	}
	c.rc.WriteNull()
}

var resp3Null = []byte("_\r\n")

// nullArray is Redis's null for an array-typed reply (COMMAND INFO of an
// unknown command).
func (c cmdCtx) nullArray() {
	if c.fc.proto == 3 {
		c.rc.WriteRaw(resp3Null)
		return
	}
	c.rc.WriteRaw([]byte("*-1\r\n"))
}

// mapHeader writes a map of n pairs: "%n" in RESP3, an array of 2n in RESP2.
func (c cmdCtx) mapHeader(n int) {
	if c.fc.proto == 3 {
		c.rc.WriteRaw(strconv.AppendInt([]byte{'%'}, int64(n), 10))
		c.rc.WriteRaw(crlf)
		return
	}
	c.rc.WriteArray(2 * n)
}

var crlf = []byte("\r\n")

// setHeader writes a set of n elements: "~n" in RESP3, an array in RESP2.
func (c cmdCtx) setHeader(n int) {
	if c.fc.proto == 3 {
		c.rc.WriteRaw(strconv.AppendInt([]byte{'~'}, int64(n), 10))
		c.rc.WriteRaw(crlf)
		return
	}
	c.rc.WriteArray(n)
}

// verbatim writes a text reply: a RESP3 verbatim string ("=len\r\ntxt:...")
// or a RESP2 bulk string, as Redis does for INFO and CLIENT INFO.
func (c cmdCtx) verbatim(s string) {
	if c.fc.proto != 3 {
		c.rc.WriteBulkString(s)
		return
	}
	b := make([]byte, 0, len(s)+24)
	b = append(b, '=')
	b = strconv.AppendInt(b, int64(len(s)+4), 10)
	b = append(b, "\r\ntxt:"...)
	b = append(b, s...)
	b = append(b, crlf...)
	c.rc.WriteRaw(b)
}

func (c cmdCtx) syntaxErr() { c.err("ERR syntax error") }

func (c cmdCtx) notInt() { c.err("ERR value is not an integer or out of range") }

func (c cmdCtx) subArity(sub string) {
	c.err("ERR wrong number of arguments for '" + c.fc.node.nameOf(c.idx) + "|" + sub + "' command")
}

func (c cmdCtx) unknownSub(cmdUpper string) {
	c.err("ERR unknown subcommand '" + trunc(c.args[1], 128) + "'. Try " + cmdUpper + " HELP.")
}

func (n *Node) nameOf(idx int) string { return commandTable[idx].name }

// parseInt parses a canonical base-10 int64 as Redis's string2ll does: no
// sign other than a leading '-', no leading zeros, no spaces.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if len(b) == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// eqFold reports whether b equals the lower-case ASCII word s, ignoring case.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
