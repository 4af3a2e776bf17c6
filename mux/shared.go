package mux

import (
	"bytes"
	"sync"

	"github.com/redmux/redmux/resp"
)

// This file holds shared commands (Batch.AddShared): a read whose answer
// is about the state after a batch's other commands ran (redlock's
// data-set marker, a WAIT) is sent once per write on a connection, after
// every command of every batch that asked for it in that write, and its
// one reply is stored for each of them. Under concurrency one MGET then
// serves every acquisition a write carries; a lone caller's batch gets
// its own.

// sharedGroup is one shared command waiting on a connection: its bytes,
// the reply kinds it accepts, and the batches (subscribers) whose command
// it stands for.
type sharedGroup struct {
	cmd  []byte
	exp  Expect
	subs []sharedSub
	at   int64 // the earliest subscriber's deadline (HardTimeout counts from it)
	// next is where find looks first: subscribers are in the order their
	// batches' commands were queued, so their replies come in that order
	// and take meets them one after another
	next int
}

// sharedSub is one batch's command that a shared group stands for.
type sharedSub struct {
	b   *Batch
	gen uint64
	k   int32
}

var groupPool = sync.Pool{New: func() any { return &sharedGroup{} }}

func putGroup(g *sharedGroup) {
	clear(g.subs)
	g.subs, g.cmd, g.next = g.subs[:0], g.cmd[:0], 0
	groupPool.Put(g)
}

// AddShared appends for node a command whose reply may be shared: when
// other batches' same command (the same bytes and Expect) goes out on the
// same connection in the same write, it is sent once, after every command
// those batches queued before it, and its reply is stored for each. It
// suits a read whose answer is about the state after the batch's other
// commands ran, never one that changes anything. Shared commands come
// after a node's other commands of the batch (an Add after one makes the
// next Do fail with ErrBadBatch), and are neither redirected (MOVED, ASK)
// nor retried (NOSCRIPT): such a reply is delivered as the error it is.
func (b *Batch) AddShared(node int, cmd []byte, e Expect) {
	if node < 0 || node >= b.n || !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	b.addShared(node, b.put(cmd), e)
}

// BroadcastShared is AddShared for every node.
func (b *Batch) BroadcastShared(cmd []byte, e Expect) {
	if !oneFrame(cmd) {
		b.bad = ErrBadBatch
		return
	}
	sp := b.put(cmd) // once for every node
	for i := 0; i < b.n; i++ {
		b.addShared(i, sp, e)
	}
}

func (b *Batch) addShared(node int, sp span, e Expect) {
	n := b.nshared[node]
	b.nshared[node] = 0 // add refuses a command after a shared one
	b.add(node, sp, e)
	b.nshared[node] = n + 1
}

// unshared is how many of node's commands in b are sent as they are (the
// shared ones, trailing, are not).
func (b *Batch) unshared(node int) int { return len(b.cmds[node]) - b.nshared[node] }

// share subscribes command k of b (call generation gen) to the connection's
// pending group of the same bytes and Expect, made if there is none. mu
// held.
func (cn *pconn) share(b *Batch, gen uint64, k int, deadline int64) {
	cmd, e := b.cmd(cn.node, k), b.exp[cn.node][k]
	sub := sharedSub{b: b, gen: gen, k: int32(k)}
	for _, g := range cn.pend {
		if g.exp == e && bytes.Equal(g.cmd, cmd) {
			g.subs = append(g.subs, sub)
			g.at = min(g.at, deadline)
			return
		}
	}
	g := groupPool.Get().(*sharedGroup)
	g.cmd = append(g.cmd[:0], cmd...)
	g.exp, g.at = e, deadline
	g.subs = append(g.subs[:0], sub)
	cn.pend = append(cn.pend, g)
	cn.pendBytes += len(g.cmd)
}

// flushShared queues the pending groups behind everything queued so far:
// their bytes at the end of wq, their slots at the end of the ring, in the
// same order. mu held.
func (cn *pconn) flushShared() {
	for i, g := range cn.pend {
		cn.wq = append(cn.wq, g.cmd...)
		cn.q.push(slot{grp: g, exp: g.exp, at: g.at})
		cn.pend[i] = nil
	}
	cn.pend, cn.pendBytes = cn.pend[:0], 0
}

// deliverShared stores a shared group's reply for every subscriber whose
// call is still waiting, and gives the group back to the pool (reader side).
func (cn *pconn) deliverShared(g *sharedGroup, f []byte, isErr bool, sh resp.Shape) {
	for _, s := range g.subs {
		if s.b == nil {
			continue // taken with its batch's other replies (later.take)
		}
		s.b.mu.Lock()
		if cl := &s.b.call; cl.gen == s.gen && cl.live {
			s.b.store(cn.node, int(s.k), f, isErr, sh)
		}
		s.b.mu.Unlock()
	}
	putGroup(g)
}

// find returns the index of b's first subscription of call gen to g, or
// -1: from next on (where the batches whose replies came before b's
// ended), then from the start. A batch's subscriptions to one group are
// adjacent (share runs under mu for all of them).
func (g *sharedGroup) find(b *Batch, gen uint64) int {
	for j := range g.subs {
		k := (g.next + j) % len(g.subs) // next <= len(subs): take sets it
		if s := &g.subs[k]; s.b == b && s.gen == gen {
			return k
		}
	}
	return -1
}

// expand appends to into a plain slot for every subscriber of g, and gives
// g back to the pool (a connection detached: its slots are failed).
func expand(into []slot, g *sharedGroup) []slot {
	for _, s := range g.subs {
		into = append(into, slot{b: s.b, gen: s.gen, k: s.k})
	}
	putGroup(g)
	return into
}
