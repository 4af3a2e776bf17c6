package fakeserver

import (
	"math"
	"sort"
	"strconv"
)

// Keyspace commands. Their bodies run with n.mu held (cmdDef.locked):
// dispatch takes it around one command, EXEC around a transaction and EVAL
// around a whole script, which makes both atomic as in Redis.

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
	setAnyExpire = setEX | setPX | setEXAT | setPXAT
)

func nowMs(ns int64) int64 { return ns / 1e6 }

func cmdSet(n *Node, c cmdCtx) {
	flags := 0
	var expArg []byte
	a := c.args
	for j := 3; j < len(a); j++ {
		opt := a[j]
		hasNext := j+1 < len(a)
		switch {
		case eqFold(opt, "nx") && flags&setXX == 0:
			flags |= setNX
		case eqFold(opt, "xx") && flags&setNX == 0:
			flags |= setXX
		case eqFold(opt, "get"):
			flags |= setGet
		case eqFold(opt, "keepttl") && flags&setAnyExpire == 0:
			flags |= setKeepTTL
		case eqFold(opt, "ex") && flags&(setKeepTTL|setAnyExpire&^setEX) == 0 && hasNext:
			flags |= setEX
			j++
			expArg = a[j]
		case eqFold(opt, "px") && flags&(setKeepTTL|setAnyExpire&^setPX) == 0 && hasNext:
			flags |= setPX
			j++
			expArg = a[j]
		case eqFold(opt, "exat") && flags&(setKeepTTL|setAnyExpire&^setEXAT) == 0 && hasNext:
			flags |= setEXAT
			j++
			expArg = a[j]
		case eqFold(opt, "pxat") && flags&(setKeepTTL|setAnyExpire&^setPXAT) == 0 && hasNext:
			flags |= setPXAT
			j++
			expArg = a[j]
		default:
			c.syntaxErr()
			return
		}
	}
	var when int64 // absolute ms on the node clock, 0 = none
	now := n.nowLocked()
	if flags&setAnyExpire != 0 {
		v, ok := parseInt(expArg)
		if !ok {
			c.notInt()
			return
		}
		if v <= 0 || (flags&(setEX|setEXAT) != 0 && v > math.MaxInt64/1000) {
			c.err("ERR invalid expire time in 'set' command")
			return
		}
		if flags&(setEX|setEXAT) != 0 {
			v *= 1000
		}
		if flags&(setEX|setPX) != 0 {
			base := nowMs(now)
			if v > math.MaxInt64-base {
				c.err("ERR invalid expire time in 'set' command")
				return
			}
			v += base
		}
		when = v
	}
	db := c.fc.db
	key := c.args[1]
	old, exists := n.lookup(db, string(key), now)
	if flags&setGet != 0 && exists && old.kind != kindString {
		c.err(wrongType)
		return
	}
	if (flags&setNX != 0 && exists) || (flags&setXX != 0 && !exists) {
		if flags&setGet != 0 && exists {
			c.rc.WriteBulk(old.val)
			return
		}
		c.null()
		return
	}
	if flags&setGet != 0 {
		if exists {
			c.rc.WriteBulk(old.val)
		} else {
			c.null()
		}
	}
	e := entry{exp: when}
	if flags&setKeepTTL != 0 && exists {
		e.exp = old.exp
	}
	if exists && old.kind == kindString && flags&setGet == 0 && cap(old.val) >= len(c.args[2]) {
		e.val = append(old.val[:0], c.args[2]...)
	} else {
		e.val = append([]byte(nil), c.args[2]...)
	}
	n.put(db, string(key), e)
	if flags&setGet == 0 {
		c.ok()
	}
}

// getString looks key up as a string; it replies WRONGTYPE (and returns
// ok=false) for another kind.
func getString(n *Node, c cmdCtx, key []byte) (e entry, exists, ok bool) {
	e, exists = n.lookup(c.fc.db, string(key), n.nowLocked())
	if exists && e.kind != kindString {
		c.err(wrongType)
		return e, true, false
	}
	return e, exists, true
}

func cmdGet(n *Node, c cmdCtx) {
	e, exists, ok := getString(n, c, c.args[1])
	if !ok {
		return
	}
	if !exists {
		c.null()
		return
	}
	c.rc.WriteBulk(e.val)
}

func cmdGetDel(n *Node, c cmdCtx) {
	e, exists, ok := getString(n, c, c.args[1])
	if !ok {
		return
	}
	if !exists {
		c.null()
		return
	}
	n.remove(c.fc.db, string(c.args[1]))
	c.rc.WriteBulk(e.val)
}

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

func cmdIncr(n *Node, c cmdCtx) { incrBy(n, c, 1) }
func cmdDecr(n *Node, c cmdCtx) { incrBy(n, c, -1) }
func cmdIncrBy(n *Node, c cmdCtx) {
	v, ok := parseInt(c.args[2])
	if !ok {
		c.notInt()
		return
	}
	incrBy(n, c, v)
}

func cmdDecrBy(n *Node, c cmdCtx) {
	v, ok := parseInt(c.args[2])
	if !ok {
		c.notInt()
		return
	}
	if v == math.MinInt64 {
		c.err("ERR decrement would overflow")
		return
	}
	incrBy(n, c, -v)
}

func incrBy(n *Node, c cmdCtx, by int64) {
	key := string(c.args[1])
	e, exists, ok := getString(n, c, c.args[1])
	if !ok {
		return
	}
	var v int64
	if exists {
		var good bool
		v, good = parseInt(e.val)
		if !good {
			c.notInt()
			return
		}
		if (by > 0 && v > math.MaxInt64-by) || (by < 0 && v < math.MinInt64-by) {
			c.err("ERR increment or decrement would overflow")
			return
		}
	}
	v += by
	e.val = strconv.AppendInt(e.val[:0:0], v, 10)
	n.put(c.fc.db, key, e)
	c.rc.WriteInt64(v)
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
		if pattern == nil || globMatchRedis(pattern, []byte(k), false) {
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
		if pattern != nil && !globMatchRedis(pattern, []byte(k), false) {
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

// globMatchRedis is Redis's stringmatchlen: *, ?, [abc], [^a-z], \x.
func globMatchRedis(p, s []byte, nocase bool) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatchRedis(p[1:], s[i:], nocase) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) >= 2:
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				case len(p) >= 3 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					ch := s[0]
					if ch >= lo && ch <= hi {
						match = true
					}
					p = p[2:]
				default:
					if p[0] == s[0] {
						match = true
					}
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 {
				return len(s) == 0 // unterminated class: Redis stops here
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
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
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	n.touchDB(-1)
	c.ok()
}

func cmdFlushDB(n *Node, c cmdCtx) {
	if !flushArgs(c) {
		return
	}
	n.dbs[c.fc.db] = make(map[string]entry)
	n.touchDB(c.fc.db)
	c.ok()
}

// cmdGetRange is GETRANGE key start end (bsm/redislock's obtain script
// uses it), with Redis's negative-index rules.
func cmdGetRange(n *Node, c cmdCtx) {
	start, ok1 := parseInt(c.args[2])
	end, ok2 := parseInt(c.args[3])
	if !ok1 || !ok2 {
		c.notInt()
		return
	}
	e, exists, ok := getString(n, c, c.args[1])
	if !ok {
		return
	}
	s := e.val
	if !exists || len(s) == 0 || (start < 0 && end < 0 && start > end) {
		c.rc.WriteBulk(nil)
		return
	}
	ln := int64(len(s))
	if start < 0 {
		start = max(ln+start, 0)
	}
	if end < 0 {
		end = max(ln+end, 0)
	}
	end = min(end, ln-1)
	if start > end {
		c.rc.WriteBulk(nil)
		return
	}
	c.rc.WriteBulk(s[start : end+1])
}

func cmdStrLen(n *Node, c cmdCtx) {
	e, _, ok := getString(n, c, c.args[1])
	if !ok {
		return
	}
	c.rc.WriteInt(len(e.val))
}

func cmdMGet(n *Node, c cmdCtx) {
	now := n.nowLocked()
	c.rc.WriteArray(len(c.args) - 1)
	for _, k := range c.args[1:] {
		e, ok := n.lookup(c.fc.db, string(k), now)
		if !ok || e.kind != kindString {
			c.null()
			continue
		}
		c.rc.WriteBulk(e.val)
	}
}

func cmdSetNX(n *Node, c cmdCtx) {
	key := string(c.args[1])
	if _, ok := n.lookup(c.fc.db, key, n.nowLocked()); ok {
		c.rc.WriteInt(0)
		return
	}
	n.put(c.fc.db, key, entry{val: append([]byte(nil), c.args[2]...)})
	c.rc.WriteInt(1)
}
