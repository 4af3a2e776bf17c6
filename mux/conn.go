package mux

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"

	"github.com/redmux/redmux/resp"
)

// This file holds the platform-independent half of a lane: reply matching
// (owed replies first, in FIFO order, then the batch's own), the NOSCRIPT
// fallback, the quorum bookkeeping and the end-of-batch accounting. The
// platform half (lane_linux.go: epoll; lane_other.go: net.Conn) moves bytes.

var (
	errUnexpected   = errors.New("reply without a pending command")
	errPartialWrite = errors.New("batch deadline passed with a command partly written; connection replaced")
)

// owedGroup is a run of replies owed by a connection, with the time their
// commands were sent.
type owedGroup struct {
	n  int
	at int64
}

const owedRing = 16

// conn is one connection of a lane to one node. Its fields are owned by
// whoever holds the lane, except need and ready, which it shares with the
// supervisor: the owner closes a broken socket and sets need; the
// supervisor clears need, dials, and stores the new connection in ready;
// the owner installs it at its next batch.
type conn struct {
	sock // platform socket; invalid when down

	rbuf []byte // read buffer; unparsed bytes are rbuf[r:w]
	r, w int

	owed   int // replies still owed by earlier batches
	q      [owedRing]owedGroup
	qh, qn int

	wout []byte // owned write bytes (NOSCRIPT fallback)

	need  atomic.Bool
	ready atomic.Pointer[handle]
}

func (cn *conn) pushOwed(n int, at int64) {
	if n <= 0 {
		return
	}
	cn.owed += n
	if cn.qn == owedRing { // merge into the newest group, keeping the older time
		cn.q[(cn.qh+cn.qn-1)%owedRing].n += n
		return
	}
	cn.q[(cn.qh+cn.qn)%owedRing] = owedGroup{n: n, at: at}
	cn.qn++
}

func (cn *conn) popOwed() {
	cn.owed--
	g := &cn.q[cn.qh]
	g.n--
	if g.n <= 0 {
		cn.qh = (cn.qh + 1) % owedRing
		cn.qn--
	}
}

func (cn *conn) oldestOwed() int64 { return cn.q[cn.qh].at }

// resetState forgets everything about the stream (after the socket closed).
func (cn *conn) resetState() {
	cn.r, cn.w = 0, 0
	cn.owed, cn.qh, cn.qn = 0, 0, 0
	cn.wout = cn.wout[:0]
}

// nodeRun is one node's state during a Do.
type nodeRun struct {
	active  bool   // the node has commands in the batch
	done    bool   // finished: all replies in, or failed
	wdata   []byte // bytes still to write
	written int    // bytes of this batch written
	slots   []int  // expected replies in order: command index, or -1 (internal)
	sh      int    // next slot
	retries int    // NOSCRIPT fallbacks in this batch
}

// lane is one connection to each node plus the per-batch state. A lane is
// used by one Do at a time.
type lane struct {
	c     *Client
	conns []conn
	run   []nodeRun

	// per Do
	b       *Batch
	pol     Policy
	ctx     context.Context
	active  int
	open    int
	succ    int
	fail    int
	decided bool

	lanePlat
}

// begin prepares the per-node state for b.
func (l *lane) begin(b *Batch) {
	l.b = b
	b.begin()
	l.active, l.open, l.succ, l.fail, l.decided = 0, 0, 0, 0, false
	for i := range l.run {
		st := &l.run[i]
		k := len(b.offs[i])
		st.active = k > 0
		st.done = false
		st.wdata = nil
		st.written = 0
		st.sh = 0
		st.retries = 0
		st.slots = st.slots[:0]
		if k > 0 {
			l.active++
			l.open++
			for j := 0; j < k; j++ {
				st.slots = append(st.slots, j)
			}
		}
	}
	if l.pol.Quorum > 0 && l.active < l.pol.Quorum {
		l.decided = true // out of reach from the start
	}
}

// prepare makes node i's connection ready for the batch: installs a
// redialled connection, skips owed replies that have arrived, and closes a
// connection whose owed replies are overdue. It reports whether the node's
// commands can be written.
func (l *lane) prepare(i int, now int64) bool {
	cn := &l.conns[i]
	nd := &l.c.nodes[i]
	if !cn.valid() {
		h := cn.ready.Swap(nil)
		if h == nil {
			l.failNode(i, nd.downErr.Load())
			return false
		}
		l.attach(i, h)
		if !cn.valid() {
			l.failNode(i, nd.downErr.Load())
			return false
		}
	}
	if cn.owed > 0 && (now-cn.oldestOwed() > int64(l.c.cfg.HardTimeout) || nd.stalled.Load()) {
		l.drain(i)
		if !cn.valid() {
			return false
		}
		if cn.owed > 0 {
			nd.stalled.Store(true)
			l.breakConn(i, &NodeError{Node: i, Addr: nd.addr, Kind: ErrNodeDown, Cause: errOverdue})
			return false
		}
	}
	return true
}

// ingest parses what node i's connection has buffered: push frames are
// dropped, owed replies skipped, then replies are matched to the batch's
// commands in order.
func (l *lane) ingest(i int) {
	cn := &l.conns[i]
	st := &l.run[i]
	b := l.b
	p := &l.c.cfg.Parser
	for cn.r < cn.w {
		buf := cn.rbuf[cn.r:cn.w]
		if cn.owed > 0 && buf[0] != resp.TypePush && buf[0] != resp.TypeAttribute {
			n, err := p.Skip(buf)
			if err == resp.ErrIncomplete {
				break
			}
			if err != nil {
				l.protocol(i, err)
				return
			}
			cn.r += n
			cn.popOwed()
			continue
		}
		rep, n, err := p.Parse(buf)
		if err == resp.ErrIncomplete {
			break
		}
		if err != nil {
			l.protocol(i, err)
			return
		}
		cn.r += n
		if rep.Type == resp.TypePush {
			continue
		}
		if cn.owed > 0 {
			cn.popOwed()
			continue
		}
		if b == nil || !st.active || st.done || st.written == 0 || st.sh >= len(st.slots) {
			l.protocol(i, errUnexpected)
			return
		}
		k := st.slots[st.sh]
		st.sh++
		if k < 0 {
			continue // reply to an internal command (SCRIPT LOAD)
		}
		isErr := rep.IsError()
		if isErr && st.retries < len(st.slots) && rep.HasErrorPrefix("NOSCRIPT") {
			if l.noscript(i, k) {
				if st.done {
					return
				}
				continue
			}
		}
		b.store(i, k, buf[:n], isErr)
	}
	if cn.r == cn.w {
		cn.r, cn.w = 0, 0
	}
	if b != nil && st.active && !st.done && st.written > 0 && st.sh == len(st.slots) {
		l.complete(i)
	}
}

var evalshaName = []byte("EVALSHA")

// noscript resends node i's command k, an EVALSHA of a registered script
// that got NOSCRIPT, as EVAL with the script's text, followed by SCRIPT LOAD
// of the script. It reports whether it did (cold path: it allocates).
func (l *lane) noscript(i, k int) bool {
	cmd := l.b.cmd(i, k)
	rep, _, err := resp.Parse(cmd)
	if err != nil || rep.Type != resp.TypeArray || rep.Len() < 2 {
		return false
	}
	it := rep.Iter()
	var a resp.Reply
	if !it.Next(&a) || !bytes.EqualFold(a.Data, evalshaName) {
		return false
	}
	if !it.Next(&a) {
		return false
	}
	s := l.c.cfg.script(a.Data)
	if s == nil {
		return false
	}
	st := &l.run[i]
	st.retries++
	extra := resp.AppendArrayHeader(nil, rep.Len())
	extra = resp.AppendBulkString(extra, "EVAL")
	extra = resp.AppendBulkString(extra, s.Text)
	for it.Next(&a) {
		extra = append(extra, a.Raw...)
	}
	extra = resp.AppendCommand(extra, "SCRIPT", "LOAD", s.Text)
	st.slots = append(st.slots, k, -1)
	l.queueWrite(i, extra)
	return true
}

// complete records node i as finished with every reply in.
func (l *lane) complete(i int) {
	st := &l.run[i]
	st.done = true
	l.open--
	b := l.b
	ok := true
	rs := b.res[i]
	for k := range rs {
		if rs[k].isErr {
			ok = false
			break
		}
	}
	if ok && l.pol.Success != nil {
		rep, good := b.frame(i, len(rs)-1)
		ok = good && l.pol.Success(i, rep)
	}
	if ok {
		l.succ++
	} else {
		l.fail++
	}
	l.decide()
}

func (l *lane) decide() {
	if q := l.pol.Quorum; q > 0 && (l.succ >= q || l.active-l.fail < q) {
		l.decided = true
	}
}

// failNode records a node-level error for node i if it is still open in
// the current batch.
func (l *lane) failNode(i int, err error) {
	st := &l.run[i]
	if l.b == nil || !st.active || st.done {
		return
	}
	st.done = true
	l.open--
	l.fail++
	l.b.errs[i] = err
	l.decide()
}

func (l *lane) protocol(i int, cause error) {
	nd := &l.c.nodes[i]
	l.breakConn(i, &NodeError{Node: i, Addr: nd.addr, Kind: ErrProtocol, Cause: cause})
}

func (l *lane) broken(i int, cause error) {
	nd := &l.c.nodes[i]
	l.breakConn(i, &NodeError{Node: i, Addr: nd.addr, Kind: ErrConnBroken, Cause: cause})
}

// breakConn closes node i's connection, hands it to the supervisor for
// redial, and fails the node in the current batch with err.
func (l *lane) breakConn(i int, err *NodeError) {
	cn := &l.conns[i]
	if cn.valid() {
		l.closeConn(i)
	}
	cn.resetState()
	nd := &l.c.nodes[i]
	if !l.c.closed.Load() {
		nd.down.Store(true)
		nd.downErr.Store(&NodeError{Node: i, Addr: nd.addr, Kind: ErrNodeDown, Cause: err})
		cn.need.Store(true)
		l.c.wakeSupervisor(i)
	}
	l.failNode(i, err)
}

// finish settles the nodes still open when the batch stops waiting and
// returns the outcome.
func (l *lane) finish(start int64) Outcome {
	b := l.b
	pending := 0
	for i := range l.run {
		st := &l.run[i]
		if !st.active || st.done {
			continue
		}
		cn := &l.conns[i]
		switch {
		case st.written == 0:
			// Nothing of this batch reached the socket: drop it.
			l.unqueue(i)
			st.done = true
			l.fail++
			b.errs[i] = ErrNotSent
		case len(st.wdata) > 0:
			l.breakConn(i, &NodeError{Node: i, Addr: l.c.nodes[i].addr, Kind: ErrTimeout, Cause: errPartialWrite})
		default:
			cn.pushOwed(len(st.slots)-st.sh, start)
			st.done = true
			pending++
			if l.decided {
				b.errs[i] = ErrPending
			} else {
				b.errs[i] = ErrTimeout
				l.fail++
			}
		}
	}
	out := Outcome{Successes: l.succ, Failures: l.fail, Pending: pending, Decided: l.decided}
	l.b = nil
	return out
}
