package fakeserver

import (
	"math"
	"sort"
	"strconv"
)

// Keyspace commands: the ones on keys of any type (DEL, EXISTS, expiry,
// TYPE, KEYS, SCAN, FLUSH*). The commands of each data type are in
// cmd_string.go, cmd_hash.go and cmd_list.go. Their bodies all run with
// n.mu held (no cmdDef.noLock): dispatch takes it around one command, EXEC
// around a transaction and EVAL around a whole script, which makes both
// atomic as in Redis.

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

func nowMs(ns int64) int64 { return ns / 1e6 }

func cmdDel(n *Node, c cmdCtx) {
	cnt := 0
	now := n.nowLocked()
	for _, k := range c.args[1:] {
		if _, ok := n.lookup(c.fc.db, string(k), now); ok {
			n.remove(c.fc.db, string(k))
			cnt++
		}
	}
	c.rc.WriteInt(cnt)
}

func cmdExists(n *Node, c cmdCtx) {
	cnt := 0
	now := n.nowLocked()
	for _, k := range c.args[1:] {
		if _, ok := n.lookup(c.fc.db, string(k), now); ok {
			cnt++
		}
	}
	c.rc.WriteInt(cnt)
}

const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

// expire variants: relative seconds/ms, or absolute unix seconds/ms
func cmdPexpire(n *Node, c cmdCtx)   { expireGeneric(n, c, false, false, "pexpire") }
func cmdExpire(n *Node, c cmdCtx)    { expireGeneric(n, c, true, false, "expire") }
func cmdPexpireAt(n *Node, c cmdCtx) { expireGeneric(n, c, false, true, "pexpireat") }
func cmdExpireAt(n *Node, c cmdCtx)  { expireGeneric(n, c, true, true, "expireat") }

func expireGeneric(n *Node, c cmdCtx, seconds, abs bool, name string) {
	flag := 0
	for _, o := range c.args[3:] {
		switch {
		case eqFold(o, "nx"):
			flag |= expNX
		case eqFold(o, "xx"):
			flag |= expXX
		case eqFold(o, "gt"):
			flag |= expGT
		case eqFold(o, "lt"):
			flag |= expLT
		default:
			c.err("ERR Unsupported option " + string(o))
			return
		}
	}
	if flag&expNX != 0 && flag&(expXX|expGT|expLT) != 0 {
		c.err("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if flag&expGT != 0 && flag&expLT != 0 {
		c.err("ERR GT and LT options at the same time are not compatible")
		return
	}
	v, ok := parseInt(c.args[2])
	if !ok {
		c.notInt()
		return
	}
	r, errText := n.expireLocked(c.fc.db, string(c.args[1]), v, seconds, abs, flag, name)
	if errText != "" {
		c.err(errText)
		return
	}
	c.rc.WriteInt(r)
}

// expireLocked is the core of the EXPIRE family. It returns 0/1 as Redis,
// or an error text. Callers hold n.mu.
func (n *Node) expireLocked(db int, key string, when int64, seconds, abs bool, flag int, name string) (int, string) {
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return 0, "ERR invalid expire time in '" + name + "' command"
		}
		when *= 1000
	}
	now := n.nowLocked()
	base := nowMs(now)
	if !abs {
		if when > math.MaxInt64-base {
			return 0, "ERR invalid expire time in '" + name + "' command"
		}
		when += base
	}
	e, ok := n.lookup(db, key, now)
	if !ok {
		return 0, ""
	}
	cur := e.exp
	if flag&expNX != 0 && cur != 0 {
		return 0, ""
	}
	if flag&expXX != 0 && cur == 0 {
		return 0, ""
	}
	if flag&expGT != 0 && (cur == 0 || when <= cur) {
		return 0, ""
	}
	if flag&expLT != 0 && cur != 0 && when >= cur {
		return 0, ""
	}
	if when <= base {
		n.remove(db, key)
		return 1, ""
	}
	e.exp = when
	n.put(db, key, e)
	return 1, ""
}

func cmdPersist(n *Node, c cmdCtx) {
	key := string(c.args[1])
	e, ok := n.lookup(c.fc.db, key, n.nowLocked())
	if !ok || e.exp == 0 {
		c.rc.WriteInt(0)
		return
	}
	e.exp = 0
	n.put(c.fc.db, key, e)
	c.rc.WriteInt(1)
}

func cmdPttl(n *Node, c cmdCtx) { ttlGeneric(n, c, true) }
func cmdTTL(n *Node, c cmdCtx)  { ttlGeneric(n, c, false) }

func ttlGeneric(n *Node, c cmdCtx, ms bool) {
	now := n.nowLocked()
	e, ok := n.lookup(c.fc.db, string(c.args[1]), now)
	switch {
	case !ok:
		c.rc.WriteInt(-2)
	case e.exp == 0:
		c.rc.WriteInt(-1)
	default:
		ttl := e.exp - nowMs(now)
		if ttl < 0 {
			ttl = 0
		}
		if !ms {
			ttl = (ttl + 500) / 1000
		}
		c.rc.WriteInt64(ttl)
	}
}

func cmdType(n *Node, c cmdCtx) {
	e, ok := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	if ok {
		c.rc.WriteString(e.typeName())
		return
	}
	c.rc.WriteString("none")
}

func cmdDBSize(n *Node, c cmdCtx) { c.rc.WriteInt(n.dbsizeLocked(c.fc.db)) }

// liveKeys returns the unexpired keys of db matching pattern, sorted.
func (n *Node) liveKeys(db int, pattern []byte, kind string) []string {
	now := n.nowLocked()
	var out []string
	for k, e := range n.dbs[db] {
		if e.exp != 0 && e.exp < now/1e6 {
			continue
		}
		if kind != "" && e.typeName() != kind {
			continue
		}
		if pattern == nil || globMatch(pattern, []byte(k)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func cmdKeys(n *Node, c cmdCtx) {
	keys := n.liveKeys(c.fc.db, c.args[1], "")
	c.rc.WriteArray(len(keys))
	for _, k := range keys {
		c.rc.WriteBulkString(k)
	}
}

// cmdScan walks the sorted key list: the cursor is an offset in it. Keys
// present for the whole scan are returned once; as SCAN allows, keys added
// or removed meanwhile may be missed or repeated.
func cmdScan(n *Node, c cmdCtx) {
	cur, ok := parseUint(c.args[1])
	if a := c.args[1]; !ok && len(a) > 1 && a[0] == '-' {
		// Redis reads the cursor with strtoull, which takes a sign: a
		// negative cursor wraps to one past every key ("0" and nothing)
		if _, digits := parseUint(a[1:]); digits {
			cur, ok = math.MaxUint64, true
		}
	}
	if !ok {
		c.err("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pattern []byte
	kind := ""
	for j := 2; j < len(c.args); j += 2 {
		if j+1 >= len(c.args) {
			c.syntaxErr()
			return
		}
		switch o := c.args[j]; {
		case eqFold(o, "count"):
			v, ok := parseInt(c.args[j+1])
			if !ok {
				c.notInt()
				return
			}
			if v < 1 {
				c.syntaxErr()
				return
			}
			count = v
		case eqFold(o, "match"):
			pattern = c.args[j+1]
		case eqFold(o, "type"):
			kind = string(lowerASCII(c.args[j+1]))
		default:
			c.syntaxErr()
			return
		}
	}
	all := n.liveKeys(c.fc.db, nil, "")
	start := min(cur, uint64(len(all)))
	end := min(start+uint64(count), uint64(len(all)))
	next := end
	if end == uint64(len(all)) {
		next = 0
	}
	var page []string
	for _, k := range all[start:end] {
		if pattern != nil && !globMatch(pattern, []byte(k)) {
			continue
		}
		if kind != "" {
			e := n.dbs[c.fc.db][k]
			if e.typeName() != kind {
				continue
			}
		}
		page = append(page, k)
	}
	c.rc.WriteArray(2)
	c.rc.WriteBulkString(strconv.FormatUint(next, 10))
	c.rc.WriteArray(len(page))
	for _, k := range page {
		c.rc.WriteBulkString(k)
	}
}

func parseUint(b []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// flushArgs accepts the optional ASYNC|SYNC argument of FLUSHALL/FLUSHDB.
func flushArgs(c cmdCtx) bool {
	if len(c.args) > 2 || (len(c.args) == 2 && !eqFold(c.args[1], "async") && !eqFold(c.args[1], "sync")) {
		c.syntaxErr()
		return false
	}
	return true
}

func cmdFlushAll(n *Node, c cmdCtx) {
	if !flushArgs(c) {
		return
	}
	n.touchFlushed(-1)
	n.dataGen.Add(1)
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	c.ok()
}

func cmdFlushDB(n *Node, c cmdCtx) {
	if !flushArgs(c) {
		return
	}
	n.touchFlushed(c.fc.db)
	n.dataGen.Add(1)
	n.dbs[c.fc.db] = make(map[string]entry)
	c.ok()
}
