package fakeserver

import (
	"math"
	"strconv"
)

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
	n.mu.Lock()
	now := n.nowLocked()
	if flags&setAnyExpire != 0 {
		v, ok := parseInt(expArg)
		if !ok {
			n.mu.Unlock()
			c.notInt()
			return
		}
		if v <= 0 || (flags&(setEX|setEXAT) != 0 && v > math.MaxInt64/1000) {
			n.mu.Unlock()
			c.err("ERR invalid expire time in 'set' command")
			return
		}
		if flags&(setEX|setEXAT) != 0 {
			v *= 1000
		}
		if flags&(setEX|setPX) != 0 {
			base := nowMs(now)
			if v > math.MaxInt64-base {
				n.mu.Unlock()
				c.err("ERR invalid expire time in 'set' command")
				return
			}
			v += base
		}
		when = v
	}
	db := n.dbs[c.fc.db]
	key := c.args[1]
	old, exists := n.lookup(c.fc.db, string(key), now)
	if (flags&setNX != 0 && exists) || (flags&setXX != 0 && !exists) {
		n.mu.Unlock()
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
	if exists && flags&setGet == 0 && cap(old.val) >= len(c.args[2]) {
		e.val = append(old.val[:0], c.args[2]...)
	} else {
		e.val = append([]byte(nil), c.args[2]...)
	}
	db[string(key)] = e
	n.mu.Unlock()
	if flags&setGet == 0 {
		c.ok()
	}
}

func cmdGet(n *Node, c cmdCtx) {
	n.mu.Lock()
	e, ok := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	if !ok {
		n.mu.Unlock()
		c.null()
		return
	}
	c.rc.WriteBulk(e.val) // copied into the reply buffer under the lock
	n.mu.Unlock()
}

func cmdDel(n *Node, c cmdCtx) {
	cnt := 0
	n.mu.Lock()
	now := n.nowLocked()
	for _, k := range c.args[1:] {
		if _, ok := n.lookup(c.fc.db, string(k), now); ok {
			delete(n.dbs[c.fc.db], string(k))
			cnt++
		}
	}
	n.mu.Unlock()
	c.rc.WriteInt(cnt)
}

func cmdExists(n *Node, c cmdCtx) {
	cnt := 0
	n.mu.Lock()
	now := n.nowLocked()
	for _, k := range c.args[1:] {
		if _, ok := n.lookup(c.fc.db, string(k), now); ok {
			cnt++
		}
	}
	n.mu.Unlock()
	c.rc.WriteInt(cnt)
}

func cmdIncr(n *Node, c cmdCtx) {
	n.mu.Lock()
	key := string(c.args[1])
	e, ok := n.lookup(c.fc.db, key, n.nowLocked())
	var v int64
	if ok {
		var good bool
		v, good = parseInt(e.val)
		if !good {
			n.mu.Unlock()
			c.notInt()
			return
		}
		if v == math.MaxInt64 {
			n.mu.Unlock()
			c.err("ERR increment or decrement would overflow")
			return
		}
	}
	v++
	e.val = strconv.AppendInt(e.val[:0:0], v, 10)
	n.dbs[c.fc.db][key] = e
	n.mu.Unlock()
	c.rc.WriteInt64(v)
}

const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

func cmdPexpire(n *Node, c cmdCtx) { expireGeneric(n, c, false) }
func cmdExpire(n *Node, c cmdCtx)  { expireGeneric(n, c, true) }

func expireGeneric(n *Node, c cmdCtx, seconds bool) {
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
	name := "pexpire"
	if seconds {
		name = "expire"
	}
	r, errText := n.expireKey(c.fc.db, string(c.args[1]), v, seconds, flag, name)
	if errText != "" {
		c.err(errText)
		return
	}
	c.rc.WriteInt(r)
}

// expireKey is the core of EXPIRE/PEXPIRE. It returns 0/1 as Redis, or an
// error text.
func (n *Node) expireKey(db int, key string, when int64, seconds bool, flag int, name string) (int, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.expireLocked(db, key, when, seconds, flag, name)
}

// expireLocked is expireKey with n.mu held.
func (n *Node) expireLocked(db int, key string, when int64, seconds bool, flag int, name string) (int, string) {
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return 0, "ERR invalid expire time in '" + name + "' command"
		}
		when *= 1000
	}
	now := n.nowLocked()
	base := nowMs(now)
	if when > math.MaxInt64-base {
		return 0, "ERR invalid expire time in '" + name + "' command"
	}
	when += base
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
		delete(n.dbs[db], key)
		return 1, ""
	}
	e.exp = when
	n.dbs[db][key] = e
	return 1, ""
}

func cmdPttl(n *Node, c cmdCtx) { ttlGeneric(n, c, true) }
func cmdTTL(n *Node, c cmdCtx)  { ttlGeneric(n, c, false) }

func ttlGeneric(n *Node, c cmdCtx, ms bool) {
	n.mu.Lock()
	now := n.nowLocked()
	e, ok := n.lookup(c.fc.db, string(c.args[1]), now)
	n.mu.Unlock()
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
	n.mu.Lock()
	_, ok := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	n.mu.Unlock()
	if ok {
		c.rc.WriteString("string")
		return
	}
	c.rc.WriteString("none")
}

func cmdDBSize(n *Node, c cmdCtx) {
	n.mu.Lock()
	s := n.dbsizeLocked(c.fc.db)
	n.mu.Unlock()
	c.rc.WriteInt(s)
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
	n.mu.Lock()
	for i := range n.dbs {
		n.dbs[i] = make(map[string]entry)
	}
	n.mu.Unlock()
	c.ok()
}

func cmdFlushDB(n *Node, c cmdCtx) {
	if !flushArgs(c) {
		return
	}
	n.mu.Lock()
	n.dbs[c.fc.db] = make(map[string]entry)
	n.mu.Unlock()
	c.ok()
}
