package fakeserver

// MULTI, EXEC, DISCARD, WATCH, UNWATCH. EXEC runs the queued commands with
// n.mu held throughout, so a transaction is atomic; a watched key written
// by anyone (this connection included) since WATCH makes EXEC reply a null
// array, as in Redis.

type queuedCmd struct {
	idx  int
	args [][]byte
}

// watchVer counts writes to one watched key; refs is how many watches
// (over all connections) point at it.
type watchVer struct {
	ver  uint64
	refs int
}

type watchRef struct {
	key watchKey
	w   *watchVer
	ver uint64
}

func cmdMulti(n *Node, c cmdCtx) {
	if c.fc.inMulti {
		c.err("ERR MULTI calls can not be nested")
		return
	}
	c.fc.inMulti = true
	c.fc.multiDirty = false
	c.fc.multiQ = nil
	c.ok()
}

func cmdDiscard(n *Node, c cmdCtx) {
	if !c.fc.inMulti {
		c.err("ERR DISCARD without MULTI")
		return
	}
	c.fc.inMulti, c.fc.multiDirty, c.fc.multiQ = false, false, nil
	n.dropWatches(c.fc, c.held)
	c.ok()
}

func cmdExec(n *Node, c cmdCtx) {
	fc := c.fc
	if !fc.inMulti {
		c.err("ERR EXEC without MULTI")
		return
	}
	q, dirty := fc.multiQ, fc.multiDirty
	fc.inMulti, fc.multiDirty, fc.multiQ = false, false, nil
	if dirty {
		n.unwatchAll(fc, c.held)
		c.err("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if n.lua.busy.Load() { // turned busy since dispatch looked
		n.dropWatches(fc, c.held)
		c.err("EXECABORT Transaction discarded because of: " + busyErr)
		return
	}
	n.mu.Lock()
	// a flush since dispatch looked comes before the replies
	n.flushPush(fc)
	if msg := n.execSlotRefusal(q); msg != "" { // cluster mode, under mu (slots.go)
		n.unwatchLocked(fc)
		n.mu.Unlock()
		c.err(msg)
		return
	}
	for _, r := range fc.watches {
		if r.w.ver != r.ver {
			n.unwatchLocked(fc)
			n.mu.Unlock()
			c.nullArray()
			return
		}
	}
	c.rc.WriteArray(len(q))
	for _, qc := range q {
		n.cmdStats[qc.idx].calls.Add(1)
		commandTable[qc.idx].fn(n, cmdCtx{rc: c.rc, fc: fc, args: qc.args, idx: qc.idx, held: true})
	}
	n.unwatchLocked(fc)
	n.mu.Unlock()
}

// execAbort is Redis's execCommandAbort, for an EXEC rejected before it
// runs (wrong arity, a busy script): the transaction, if any, and the
// watches are discarded, and EXEC answers "-EXECABORT Transaction discarded
// because of: <why>".
func (n *Node) execAbort(fc *fconn, why string) {
	fc.inMulti, fc.multiDirty, fc.multiQ = false, false, nil
	n.dropWatches(fc, false)
	fc.out.WriteError("EXECABORT Transaction discarded because of: " + why)
}

func cmdWatch(n *Node, c cmdCtx) {
	if c.fc.inMulti {
		c.err("ERR WATCH inside MULTI is not allowed")
		return
	}
	for _, k := range c.args[1:] {
		wk := watchKey{c.fc.db, string(k)}
		w := n.watched[wk]
		if w == nil {
			w = &watchVer{}
			n.watched[wk] = w
		}
		w.refs++
		c.fc.watches = append(c.fc.watches, watchRef{key: wk, w: w, ver: w.ver})
	}
	c.ok()
}

func cmdUnwatch(n *Node, c cmdCtx) {
	n.unwatchLocked(c.fc)
	c.ok()
}

// dropWatches drops fc's watches at once without waiting for n.mu (a busy
// script holds it, and DISCARD or an aborted EXEC must answer meanwhile):
// if n.mu is not free, their references in n.watched are released by the
// next unwatchLocked of fc.
func (n *Node) dropWatches(fc *fconn, held bool) {
	switch {
	case len(fc.watches) == 0:
	case held:
		n.unwatchLocked(fc)
	case n.mu.TryLock():
		n.unwatchLocked(fc)
		n.mu.Unlock()
	default:
		fc.stale = append(fc.stale, fc.watches...)
		fc.watches = nil
	}
}

// unwatchAll drops fc's watches, taking n.mu unless held.
func (n *Node) unwatchAll(fc *fconn, held bool) {
	if len(fc.watches) == 0 && len(fc.stale) == 0 {
		return
	}
	if !held {
		n.mu.Lock()
		defer n.mu.Unlock()
	}
	n.unwatchLocked(fc)
}

func (n *Node) unwatchLocked(fc *fconn) {
	for _, list := range [2][]watchRef{fc.watches, fc.stale} {
		for _, r := range list {
			r.w.refs--
			if r.w.refs == 0 && n.watched[r.key] == r.w {
				delete(n.watched, r.key)
			}
		}
	}
	fc.watches, fc.stale = nil, nil
}
