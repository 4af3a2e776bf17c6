package fakeserver

import (
	"math"
	"strconv"
)

// Hash commands (bodies run with n.mu held, see cmd_keys.go).

// getHash looks key up as a hash; it replies WRONGTYPE (ok=false) for
// another kind. h is nil when the key does not exist.
func getHash(n *Node, c cmdCtx) (h *hashVal, e entry, ok bool) {
	e, exists := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	if !exists {
		return nil, e, true
	}
	if e.kind != kindHash {
		c.err(wrongType)
		return nil, e, false
	}
	return e.hash, e, true
}

func cmdHSet(n *Node, c cmdCtx) {
	if len(c.args)%2 != 0 {
		c.err("ERR wrong number of arguments for '" + c.fc.node.nameOf(c.idx) + "' command")
		return
	}
	h, e, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		h = newHash()
		e = entry{kind: kindHash, hash: h}
	}
	added := 0
	for j := 2; j < len(c.args); j += 2 {
		if h.set(string(c.args[j]), c.args[j+1]) {
			added++
		}
	}
	n.put(c.fc.db, string(c.args[1]), e)
	if eqFold(c.args[0], "hmset") {
		c.ok()
		return
	}
	c.rc.WriteInt(added)
}

func cmdHSetNX(n *Node, c cmdCtx) {
	h, e, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		h = newHash()
		e = entry{kind: kindHash, hash: h}
	} else if _, has := h.get(string(c.args[2])); has {
		c.rc.WriteInt(0)
		return
	}
	h.set(string(c.args[2]), c.args[3])
	n.put(c.fc.db, string(c.args[1]), e)
	c.rc.WriteInt(1)
}

func cmdHGet(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	if h != nil {
		if v, has := h.get(string(c.args[2])); has {
			c.rc.WriteBulk(v)
			return
		}
	}
	c.null()
}

func cmdHMGet(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	c.rc.WriteArray(len(c.args) - 2)
	for _, f := range c.args[2:] {
		if h != nil {
			if v, has := h.get(string(f)); has {
				c.rc.WriteBulk(v)
				continue
			}
		}
		c.null()
	}
}

func cmdHDel(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	cnt := 0
	if h != nil {
		for _, f := range c.args[2:] {
			if h.del(string(f)) {
				cnt++
			}
		}
		if h.len() == 0 {
			n.remove(c.fc.db, string(c.args[1]))
		} else if cnt > 0 {
			n.touch(c.fc.db, string(c.args[1]))
		}
	}
	c.rc.WriteInt(cnt)
}

func cmdHGetAll(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		c.mapHeader(0)
		return
	}
	c.mapHeader(h.len())
	for i, f := range h.names {
		c.rc.WriteBulkString(f)
		c.rc.WriteBulk(h.vals[i])
	}
}

func cmdHKeys(n *Node, c cmdCtx) { hashList(n, c, true) }
func cmdHVals(n *Node, c cmdCtx) { hashList(n, c, false) }

func hashList(n *Node, c cmdCtx, names bool) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		c.rc.WriteArray(0)
		return
	}
	c.rc.WriteArray(h.len())
	for i, f := range h.names {
		if names {
			c.rc.WriteBulkString(f)
		} else {
			c.rc.WriteBulk(h.vals[i])
		}
	}
}

func cmdHLen(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		c.rc.WriteInt(0)
		return
	}
	c.rc.WriteInt(h.len())
}

func cmdHExists(n *Node, c cmdCtx) {
	h, _, ok := getHash(n, c)
	if !ok {
		return
	}
	if h != nil {
		if _, has := h.get(string(c.args[2])); has {
			c.rc.WriteInt(1)
			return
		}
	}
	c.rc.WriteInt(0)
}

func cmdHIncrBy(n *Node, c cmdCtx) {
	by, good := parseInt(c.args[3])
	if !good {
		c.notInt()
		return
	}
	h, e, ok := getHash(n, c)
	if !ok {
		return
	}
	if h == nil {
		h = newHash()
		e = entry{kind: kindHash, hash: h}
	}
	var v int64
	if cur, has := h.get(string(c.args[2])); has {
		if v, good = parseInt(cur); !good {
			c.err("ERR hash value is not an integer")
			return
		}
	}
	if (by > 0 && v > math.MaxInt64-by) || (by < 0 && v < math.MinInt64-by) {
		c.err("ERR increment or decrement would overflow")
		return
	}
	v += by
	h.set(string(c.args[2]), strconv.AppendInt(nil, v, 10))
	n.put(c.fc.db, string(c.args[1]), e)
	c.rc.WriteInt64(v)
}
