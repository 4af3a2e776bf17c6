package fakeserver

import (
	"math"
	"strconv"
)

// String commands (bodies run with n.mu held, see cmd_keys.go).

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
