package fakeserver

// List commands, enough for redis-benchmark's LPUSH/LPOP/LRANGE tests
// (bodies run with n.mu held, see cmd_keys.go).

func getList(n *Node, c cmdCtx) (l *listVal, e entry, ok bool) {
	e, exists := n.lookup(c.fc.db, string(c.args[1]), n.nowLocked())
	if !exists {
		return nil, e, true
	}
	if e.kind != kindList {
		c.err(wrongType)
		return nil, e, false
	}
	return e.list, e, true
}

func cmdLPush(n *Node, c cmdCtx) { push(n, c, true) }
func cmdRPush(n *Node, c cmdCtx) { push(n, c, false) }

func push(n *Node, c cmdCtx, left bool) {
	l, e, ok := getList(n, c)
	if !ok {
		return
	}
	if l == nil {
		l = &listVal{}
		e = entry{kind: kindList, list: l}
	}
	for _, v := range c.args[2:] {
		v = append([]byte(nil), v...)
		if left {
			l.pushLeft(v)
		} else {
			l.pushRight(v)
		}
	}
	n.put(c.fc.db, string(c.args[1]), e)
	c.rc.WriteInt(l.len())
}

func cmdLPop(n *Node, c cmdCtx) { pop(n, c, true) }
func cmdRPop(n *Node, c cmdCtx) { pop(n, c, false) }

func pop(n *Node, c cmdCtx, left bool) {
	if len(c.args) > 3 {
		c.err("ERR wrong number of arguments for '" + c.fc.node.nameOf(c.idx) + "' command")
		return
	}
	count, withCount := int64(1), len(c.args) == 3
	if withCount {
		v, good := parseInt(c.args[2])
		if !good || v < 0 {
			c.err("ERR value is out of range, must be positive")
			return
		}
		count = v
	}
	l, _, ok := getList(n, c)
	if !ok {
		return
	}
	if l == nil {
		if withCount {
			c.nullArray()
		} else {
			c.null()
		}
		return
	}
	k := int(min(count, int64(l.len())))
	got := make([][]byte, 0, k)
	for i := 0; i < k; i++ {
		if left {
			got = append(got, l.popLeft())
		} else {
			got = append(got, l.popRight())
		}
	}
	if l.len() == 0 {
		n.remove(c.fc.db, string(c.args[1]))
	} else {
		n.touch(c.fc.db, string(c.args[1]))
	}
	if !withCount {
		c.rc.WriteBulk(got[0])
		return
	}
	c.rc.WriteArray(len(got))
	for _, v := range got {
		c.rc.WriteBulk(v)
	}
}

func cmdLLen(n *Node, c cmdCtx) {
	l, _, ok := getList(n, c)
	if !ok {
		return
	}
	if l == nil {
		c.rc.WriteInt(0)
		return
	}
	c.rc.WriteInt(l.len())
}

func cmdLRange(n *Node, c cmdCtx) {
	start, ok1 := parseInt(c.args[2])
	stop, ok2 := parseInt(c.args[3])
	if !ok1 || !ok2 {
		c.notInt()
		return
	}
	l, _, ok := getList(n, c)
	if !ok {
		return
	}
	if l == nil {
		c.rc.WriteArray(0)
		return
	}
	ln := int64(l.len())
	if start < 0 {
		start = max(ln+start, 0)
	}
	if stop < 0 {
		stop = ln + stop
	}
	if stop >= ln {
		stop = ln - 1
	}
	if start > stop || start >= ln {
		c.rc.WriteArray(0)
		return
	}
	c.rc.WriteArray(int(stop - start + 1))
	for i := start; i <= stop; i++ {
		c.rc.WriteBulk(l.at(int(i)))
	}
}
