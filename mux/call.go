package mux

import (
	"runtime/debug"
	"time"

	"github.com/redmux/redmux/resp"
)

// Policy says when Do may return.
type Policy struct {
	// Quorum, when > 0, lets Do return as soon as Quorum nodes succeeded, or
	// as soon as so many failed that Quorum is out of reach. 0 waits for
	// every node (or the deadline).
	Quorum int
	// Success decides whether a node's reply counts as a success (called
	// with the reply to the node's last command in the batch; a node with an
	// error reply to any command, or an error, is a failure). nil counts any
	// non-error reply as success. It runs on the goroutine that reads
	// replies (the reader decides each call's quorum as its replies
	// arrive, which is what lets Do return at quorum), with the batch
	// locked: keep it short, since a slow predicate delays the reading of
	// every connection, and pass a package-level func, not a closure, to
	// keep Do allocation-free. A panic in it is recovered there: the node
	// counts as failed, the call ends at once, Do returns a *PanicError
	// (ErrPolicyPanic) to its caller, and the reader goes on with the
	// other calls.
	Success func(node int, r resp.Reply) bool
	// SuccessAll, when set, is used instead of Success: it is called with
	// every reply of the node's commands (Replies), for a node whose
	// commands all got a reply that is not an error. The same rules as
	// Success apply (the reader's goroutine, the batch locked, a
	// package-level func or one closure made once, panics recovered).
	SuccessAll func(node int, rs Replies) bool
	// Timeout overrides Config.Timeout for this call when > 0. The deadline
	// is also bounded by ctx's.
	Timeout time.Duration
}

// Outcome summarises a finished Do. It is the zero Outcome only when Do
// returned before queueing anything.
type Outcome struct {
	Successes int  // nodes that succeeded
	Failures  int  // nodes that failed (error reply, predicate false, or an error other than ErrPending)
	Pending   int  // nodes whose replies had not all arrived when Do returned (ErrPending or ErrTimeout; read and dropped later)
	Decided   bool // Quorum > 0 and the outcome was known early (reached or impossible)
}

// This file holds the per-call bookkeeping of a batch. Every method here
// runs with b.mu held; the caller of Do and the reader side (which
// delivers replies and connection failures) share it.

// begin starts a new call generation for p.
func (b *Batch) begin(p Policy) {
	cl := &b.call
	cl.gen++
	cl.live = true
	cl.pol = p
	cl.rbuf = cl.rbuf[:0]
	cl.active, cl.open, cl.succ, cl.fail = 0, 0, 0, 0
	cl.decided, cl.signaled = false, false
	cl.panicked = nil
	cl.cleared = false
	total := 0
	for i := 0; i < b.n; i++ {
		total += len(b.cmds[i])
	}
	if cap(cl.res) < total {
		cl.res = make([]result, total)
	}
	cl.res = cl.res[:total]
	clear(cl.res)
	off := int32(0)
	for i := 0; i < b.n; i++ {
		k := int32(len(b.cmds[i]))
		cl.nodes[i] = nodeCall{off: off, n: k, done: k == 0}
		off += k
		if cl.errs[i] != nil {
			cl.errs[i] = nil
		}
		if k > 0 {
			cl.active++
			cl.open++
		}
	}
	if p.Quorum > 0 && cl.active < p.Quorum {
		cl.decided = true // out of reach from the start
	}
	select { // a wake-up left over from an earlier call
	case <-b.wake:
	default:
	}
}

// settled reports whether Do may return.
func (cl *call) settled() bool { return cl.decided || cl.open == 0 }

// need is a lower bound on the nodes that must still complete before the
// call can settle (at least 1): with a quorum, as many as all-successes
// or all-failures would take, whichever is fewer; without, every open
// node. A leader may wait for that many at once.
func (cl *call) need() int {
	n := cl.open
	if q := cl.pol.Quorum; q > 0 {
		n = min(q-cl.succ, cl.active-cl.fail-q+1)
	}
	return max(n, 1)
}

// signal wakes Do once, when the call has settled.
func (b *Batch) signal() {
	cl := &b.call
	if cl.signaled || !cl.settled() {
		return
	}
	cl.signaled = true
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// store records a reply frame, whose parse is sh, for node's command k.
func (b *Batch) store(node, k int, frame []byte, isErr bool, sh resp.Shape) {
	cl := &b.call
	nc := &cl.nodes[node]
	r := &cl.res[int(nc.off)+k]
	if r.got || nc.done {
		return
	}
	off := len(cl.rbuf)
	cl.rbuf = append(cl.rbuf, frame...)
	r.off, r.n, r.got, r.isErr, r.shape = off, len(frame), true, isErr, sh
	nc.got++
	if nc.got == nc.n {
		b.complete(node)
	}
}

// complete records node as finished with every reply in.
func (b *Batch) complete(node int) {
	cl := &b.call
	cl.nodes[node].done = true
	cl.open--
	rs := cl.results(node)
	ok := true
	for k := range rs {
		if rs[k].isErr {
			ok = false
			break
		}
	}
	switch {
	case ok && cl.pol.SuccessAll != nil:
		ok = b.success(node, resp.Reply{}, true)
	case ok && cl.pol.Success != nil:
		last := &rs[len(rs)-1]
		ok = b.success(node, last.reply(cl.rbuf), false)
	}
	if ok {
		cl.succ++
	} else {
		cl.fail++
	}
	b.decide()
}

// success runs the call's predicate (SuccessAll with all, else Success
// on rep), recovering a panic: the call is then decided at once and Do
// returns the panic as its error.
func (b *Batch) success(node int, rep resp.Reply, all bool) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			b.call.panicked = &PanicError{Node: node, Value: v, Stack: debug.Stack()}
			ok = false
		}
	}()
	if all {
		return b.call.pol.SuccessAll(node, Replies{b: b, node: node})
	}
	return b.call.pol.Success(node, rep)
}

// Replies is one node's replies to its commands of a call, in command
// order, as Policy.SuccessAll sees them. It is valid only during that
// call of SuccessAll.
type Replies struct {
	b    *Batch
	node int
}

// Len returns how many commands (and replies) the node has.
func (r Replies) Len() int { return int(r.b.call.nodes[r.node].n) }

// At returns the reply to the node's command k (0-based).
func (r Replies) At(k int) resp.Reply {
	return r.b.call.results(r.node)[k].reply(r.b.call.rbuf)
}

// Redirected reports whether command k was resent after a Redis Cluster
// MOVED or ASK: its reply came from another primary than the node's
// other commands' (see the package documentation, Redis Cluster).
func (r Replies) Redirected(k int) bool { return r.b.call.results(r.node)[k].redirected }

// Resent reports whether command k was sent again after its first reply
// (a MOVED or ASK followed, or EVALSHA's NOSCRIPT fallback to EVAL): it
// ran after the node's commands that followed it in the batch, not
// before them.
func (r Replies) Resent(k int) bool {
	res := &r.b.call.results(r.node)[k]
	return res.redirected || res.retried
}

func (b *Batch) decide() {
	cl := &b.call
	if cl.panicked != nil {
		cl.decided = true
	}
	if q := cl.pol.Quorum; q > 0 && (cl.succ >= q || cl.active-cl.fail < q) {
		cl.decided = true
	}
	b.signal()
}

// failNode records a node-level error for node if it is still open.
func (b *Batch) failNode(node int, err error) {
	cl := &b.call
	if cl.nodes[node].done {
		return
	}
	cl.nodes[node].done = true
	cl.open--
	cl.fail++
	cl.errs[node] = err
	b.decide()
}

// end closes the call (late replies are dropped from now on) and settles
// the nodes still open: their replies are pending (ErrPending once the
// outcome was decided, ErrClosed when the client closed under the call,
// else ErrTimeout).
func (b *Batch) end(closed bool) Outcome {
	cl := &b.call
	cl.live = false
	cl.gen++
	pending := 0
	for i := 0; i < b.n; i++ {
		if cl.nodes[i].done {
			continue
		}
		cl.nodes[i].done = true
		pending++
		switch {
		case cl.decided:
			cl.errs[i] = kindErr(b.kinds, i, ErrPending)
		case closed:
			cl.errs[i] = kindErr(b.kinds, i, ErrClosed)
			cl.fail++
		default:
			cl.errs[i] = kindErr(b.kinds, i, ErrTimeout)
			cl.fail++
		}
	}
	return Outcome{Successes: cl.succ, Failures: cl.fail, Pending: pending, Decided: cl.decided}
}
