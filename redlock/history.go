package redlock

import (
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/resp"
)

// This file holds rule 4's third witness (docs/OPERATIONS.md): on a node
// that answers INFO but refused CLIENT TRACKING (no flush watch: an ACL
// without CLIENT, a proxy), a full resync from a former replica of its own
// replaces the data set on a kept connection with a copy that carries the
// accepted marker and lacks the last writes, the lock keys among them. No
// connection breaks and the marker is the one accepted; what changes is
// the node's replication history (master_replid): a resync ends with a
// promotion (REPLICAOF NO ONE), which starts a new one. So on such a node
// every acquisition reads INFO replication after its MGET, in the same
// pipeline, and a grant counts only while the history it shows is the one
// this client judged: the set-up's, or one a grant showed before
// (judgeHistory, which quarantined the node from when it was read).

// infoRepl is the history's read: INFO replication.
var infoRepl = resp.AppendCommand(nil, "INFO", "replication")

// prepHistory adds INFO replication after the MGET on every node whose
// newest set-up learnt its incarnation without turning on the flush watch
// (not on Redis Cluster nodes, whose shards' histories are theirs), and
// notes them in w.infoOn.
func (c *Client) prepHistory(w *worker, b *mux.Batch) {
	w.infoOn, w.histBad = 0, 0
	for i := 0; i < c.n; i++ {
		p := c.m.Incarnation(i)
		//mutant:history-unread
		if p == nil || !p.Known || p.WatchesFlushes || c.m.IsCluster(i) {
			continue
		}
		w.infoOn |= 1 << i
		b.AddShared(i, infoRepl, mux.ExpectBulk)
	}
}

// historyOK reports whether node i's INFO replication reply r shows the
// replication history this client judged for it; else it notes the node
// in w.histBad for judgeHistories. It runs in the grant's predicate
// (mux's reader): no allocation, no lock.
func (c *Client) historyOK(w *worker, i int, r resp.Reply) bool {
	t := &c.trust.nodes[i]
	var want string
	if h := t.hist.Load(); h != nil {
		want = *h
	} else if p := t.seen.Load(); p != nil {
		want = p.ReplID
	}
	//mutant:history-unchecked
	if v, ok := replIDOf(r); ok && string(v) == want {
		return true
	}
	w.histBad |= 1 << i
	return false
}

// replIDOf returns master_replid from an INFO replication reply (a bulk
// or verbatim string of "field:value" lines); ok false for an error reply
// or one without it. No allocation.
func replIDOf(r resp.Reply) (v []byte, ok bool) {
	return mux.InfoField(r, "master_replid")
}

// judgeHistories judges, off the grant's path, each node whose INFO
// replication the predicate found showing another history (w.histBad).
func (c *Client) judgeHistories(w *worker, b *mux.Batch) {
	for i := 0; i < c.n; i++ {
		if w.histBad&(1<<i) == 0 {
			continue
		}
		r, err := b.Reply(i, w.layout(i)+1)
		if err != nil {
			continue
		}
		v, _ := replIDOf(r) // "" for a node that no longer tells it
		c.judgeHistory(i, string(v))
	}
}

// judgeHistory applies rule 4's third witness to node i, whose INFO
// replication, read just now on a kept connection, shows the history v: if
// v is not the history judged for it, its data set was replaced (a full
// resync and a promotion) before now, so the node is quarantined for Q'
// from now, whatever its marker says, and v becomes its judged history.
// A set-up's judgement (judge) forgets it: the set-up learnt the history.
func (c *Client) judgeHistory(i int, v string) {
	ts := &c.trust
	ts.mu.Lock()
	t := &ts.nodes[i]
	var cur string
	if h := t.hist.Load(); h != nil {
		cur = *h
	} else if p := t.seen.Load(); p != nil {
		cur = p.ReplID
	}
	if v == cur || t.seen.Load() != c.m.Incarnation(i) {
		// judged already, or a newer set-up, judged by sync, tells it
		ts.mu.Unlock()
		return
	}
	left := c.quarantineFrom(t, mono())
	t.cause = ErrDataSetFlushed
	t.hist.Store(&v)
	ts.gen.Add(1) // extensions put their keys back (Lock.extend)
	ts.mu.Unlock()
	c.report(i, ErrDataSetFlushed, left, nil)
}
