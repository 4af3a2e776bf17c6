package mux

import (
	"bytes"
	"io"
	"sync/atomic"

	"github.com/redmux/redmux/resp"
)

// This file holds a connection's read side, run by whoever reads for it (on
// Linux the holder of the client's reader token, on epoll or on io_uring; a
// reader goroutine per connection in the net.Conn transport): it reads into a
// bounded buffer, parses replies in place, pops their slots in FIFO order and
// hands each reply to the batch that is still waiting for it, or drops it
// (abandoned).

const initialReadBuf = 16 << 10

// readBudget bounds what one turn reads from one non-blocking connection
// before the reader goes on to the others: a node that streams without end
// (push frames, a huge reply) is read a budget at a time, round-robin with
// every other ready connection (the epoll set is level-triggered, so it is
// reported again), and the reader looks at its own call and at Close
// between turns.
const readBudget = 256 << 10

// frame is a parsed reply in the read buffer.
type frame struct {
	off, n int
	isErr  bool
	kind   Expect     // its kind (kindOf), checked against its slot's exp
	shape  resp.Shape // what its parse learned: the batch reads it without parsing again
}

// reader is a connection's read state, owned by the reader side.
type reader struct {
	buf    []byte
	r, w   int
	frames [32]frame
	popped [32]slot
	gidx   [32]int8 // the shared commands' slots among popped (ingest)

	// Read marks, for a caller that cannot read itself (the epoll set's
	// marks; driver_token_enter_linux.go, enter): begun counts the turns of
	// readable begun, ended those finished. A turn that begins after bytes
	// arrived takes them (up to the read budget) and has judged them, stray
	// or reply, by the time it ends.
	begun, ended atomic.Uint32
}

// readable reads what l has, until it would block or readBudget bytes
// were read (raw sockets), or once (blocking links), and delivers the
// replies. It reports false when the connection was closed for an error.
func (cn *pconn) readable(l link) bool {
	cn.rd.begun.Add(1)
	ok := cn.readTurn(l)
	cn.rd.ended.Add(1)
	return ok
}

// readTurn is one turn of readable.
func (cn *pconn) readTurn(l link) bool {
	rd := &cn.rd
	max := cn.c.cfg.MaxReplyBytes
	budget := readBudget
	for {
		if rd.buf == nil {
			// Never larger than MaxReplyBytes: a reply over the cap then
			// never arrives whole, so the checks below refuse it.
			rd.buf = make([]byte, min(initialReadBuf, max))
		}
		if rd.w == len(rd.buf) {
			switch {
			case rd.r > 0:
				rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
				rd.r = 0
			case len(rd.buf) >= max:
				cn.fail(ErrProtocol, errReplyTooBig)
				return false
			default:
				nb := make([]byte, min(2*len(rd.buf), max))
				copy(nb, rd.buf[:rd.w])
				rd.buf = nb
			}
		}
		space := len(rd.buf) - rd.w
		n, err := l.read(rd.buf[rd.w:])
		if err == errWouldBlock {
			return true
		}
		if err != nil {
			cn.fail(ErrConnBroken, err)
			return false
		}
		if n == 0 {
			cn.fail(ErrConnBroken, io.EOF)
			return false
		}
		rd.w += n
		if !cn.ingest(l) {
			return false
		}
		budget -= n
		if n < space || !l.nonBlocking() || budget <= 0 {
			return true
		}
	}
}

// ingest parses the complete replies in the buffer and delivers them.
func (cn *pconn) ingest(l link) bool {
	rd := &cn.rd
	p := &cn.c.cfg.Parser
	for {
		nf := 0
		off := rd.r
		flushed := false
		for nf < len(rd.frames) && off < rd.w && !flushed {
			rep, n, err := p.Parse(rd.buf[off:rd.w])
			if err == resp.ErrIncomplete {
				if rd.w-off >= cn.c.cfg.MaxReplyBytes {
					cn.fail(ErrProtocol, errReplyTooBig)
					return false
				}
				break
			}
			if err != nil {
				cn.fail(ErrProtocol, err)
				return false
			}
			if rep.Type != resp.TypePush { // pushes are never replies
				rd.frames[nf] = frame{off: off, n: n, isErr: rep.IsError(), kind: kindOf(rep.Type, rep.Null), shape: rep.Shape()}
				nf++
			} else if isFlushPush(rep) {
				// noted before any reply after it is delivered; those
				// before it are delivered, then the connection is set up
				// again (flush.go)
				cn.c.noteFlush(cn.node)
				flushed = true
			}
			off += n
		}
		if nf > 0 && !cn.window(nf) {
			return false
		}
		rd.r = off
		//mutant:flush-connection-kept
		if flushed {
			cn.fail(ErrConnBroken, errFlushed)
			return false
		}
		if nf < len(rd.frames) {
			break
		}
	}
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
		return true
	}
	// Part of a frame is left. With no reply outstanding it can only be a
	// stray's start (or a push frame's, which is skipped when complete):
	// it is one now, not once its rest arrives, when a call made since may
	// be waiting and would take it for its reply.
	if rd.buf[rd.r] != resp.TypePush {
		cn.mu.Lock()
		idle := cn.q.n == 0
		cn.mu.Unlock()
		if idle {
			cn.fail(ErrProtocol, errUnsolicited)
			return false
		}
	}
	return true
}

// window takes the nf replies parsed into rd.frames: it pops their slots
// and delivers them, and reports false when the connection failed.
func (cn *pconn) window(nf int) bool {
	rd := &cn.rd
	cn.mu.Lock()
	if cn.q.n < nf {
		cn.mu.Unlock()
		cn.fail(ErrProtocol, errUnsolicited)
		return false
	}
	// A reply of a kind its command does not expect: the replies are out
	// of step. Those before it are delivered, then the connection breaks
	// (its slot and the rest fail with it).
	ok := nf
	var demoted error
	for i := 0; i < nf; i++ {
		if !cn.q.at(i).exp.accepts(rd.frames[i].kind) {
			ok = i
			break
		}
		// An error reply may say the process is no longer the writable
		// primary it was (READONLY, LOADING): it is delivered, then the
		// connection is replaced and the set-up judges the process again.
		// The node's topology says (errReply; a cluster's also asks for
		// the slot map again on a redirect). Nothing on the success path.
		if rd.frames[i].isErr {
			if demoted = cn.c.nodes[cn.node].topo.errReply(cn.c, cn.node, rd.buf[rd.frames[i].off:]); demoted != nil {
				ok = i + 1
				break
			}
		}
	}
	for i := 0; i < ok; i++ {
		rd.popped[i] = cn.q.pop()
	}
	cn.arrived++
	cn.freeRoom()
	cn.mu.Unlock()
	cn.deliverWindow(ok)
	if demoted != nil {
		cn.fail(ErrConnBroken, demoted)
		return false
	}
	if ok < nf {
		cn.fail(ErrProtocol, errUnexpectedKind)
		return false
	}
	return true
}

// deliverWindow delivers the first ok replies of the read window (their
// slots popped into rd.popped): consecutive replies of one call (a
// batch's commands to this node) under one lock of its batch, with the
// replies of the shared commands it subscribed to that the window holds
// too (shared.go).
func (cn *pconn) deliverWindow(ok int) {
	rd := &cn.rd
	ng := 0
	for i := 0; i < ok; i++ {
		if rd.popped[i].grp != nil {
			rd.gidx[ng] = int8(i)
			ng++
		}
	}
	for i := 0; i < ok; {
		if g := rd.popped[i].grp; g != nil {
			f := rd.frames[i]
			cn.deliverShared(g, rd.buf[f.off:f.off+f.n], f.isErr, f.shape)
			rd.popped[i] = slot{}
			i++
			continue
		}
		j := i + 1
		for j < ok && rd.popped[j].b == rd.popped[i].b && rd.popped[j].gen == rd.popped[i].gen && rd.popped[j].grp == nil {
			j++
		}
		cn.deliverRun(rd.popped[i:j], rd.frames[i:j], rd.buf, later{rd.popped[:ok], rd.frames[:ok], rd.gidx[:ng], j})
		clear(rd.popped[i:j])
		i = j
	}
}

var noscriptPrefix = []byte("-NOSCRIPT")

// isNoScript reports whether the error frame f's first word is NOSCRIPT.
// Only the code is matched, never the text after it: Redis says "NOSCRIPT
// No matching script. Please use EVAL.", Valkey "NOSCRIPT No matching
// script.".
func isNoScript(f []byte) bool {
	if !bytes.HasPrefix(f, noscriptPrefix) {
		return false
	}
	next := f[len(noscriptPrefix):]
	return len(next) > 0 && (next[0] == ' ' || next[0] == '\r')
}

// deliverRun hands replies to the batch their slots belong to (one batch
// and call generation: consecutive replies of one call), if that batch's
// call is still waiting; otherwise they are dropped. Each frame's parse
// is kept with its copy so the batch never parses it again. The batch is
// locked once for the run.
func (cn *pconn) deliverRun(slots []slot, frames []frame, buf []byte, after later) {
	b, gen := slots[0].b, slots[0].gen
	if b == nil {
		return
	}
	b.mu.Lock()
	cl := &b.call
	//mutant:mux-wrong-call
	if cl.gen == gen && cl.live {
		for i, s := range slots {
			if s.k < 0 {
				continue // an internal command's reply (SCRIPT LOAD)
			}
			f := frames[i]
			cn.deliverLocked(b, s, buf[f.off:f.off+f.n], f.isErr, f.shape)
		}
		//mutant:mux-wrong-call
		after.take(cn, b, gen, buf)
	}
	b.mu.Unlock()
}

// later is the rest of an ingest window after a run of one batch's
// replies: the shared commands' replies it holds (their indices in slots
// and frames, from from on), which the run's batch takes under its lock.
type later struct {
	slots  []slot
	frames []frame
	gidx   []int8
	from   int
}

// take stores, for b's call gen, the replies of the later shared commands
// it subscribed to, and marks it done in their groups (deliverShared
// passes over it). b.mu held.
func (l later) take(cn *pconn, b *Batch, gen uint64, buf []byte) {
	for _, gi := range l.gidx {
		if int(gi) < l.from {
			continue
		}
		g := l.slots[gi].grp
		k := g.find(b, gen)
		if k < 0 {
			continue
		}
		f := l.frames[gi]
		for ; k < len(g.subs) && g.subs[k].b == b && g.subs[k].gen == gen; k++ {
			b.store(cn.node, int(g.subs[k].k), buf[f.off:f.off+f.n], f.isErr, f.shape)
			g.subs[k].b = nil
		}
		g.next = k
	}
}

// deliverLocked is one reply of deliverRun, with b.mu held and b's call
// live in s's generation.
func (cn *pconn) deliverLocked(b *Batch, s slot, f []byte, isErr bool, sh resp.Shape) {
	k := int(s.k)
	r := &b.call.results(cn.node)[k]
	switch {
	case isErr && !r.redirected && cn.c.nodes[cn.node].topo.redirect(cn, b, k, s.gen, f):
		r.redirected = true
	case isErr && !r.retried && isNoScript(f) && cn.noscript(b, k, s.gen):
		r.retried = true
	default:
		b.store(cn.node, k, f, isErr, sh)
	}
}

var evalshaName = []byte("EVALSHA")

// noscript resends node's command k of b, an EVALSHA of a registered script
// that got NOSCRIPT, once as EVAL with the script's text, followed by SCRIPT
// LOAD of the script. It reports whether it did (cold path: it allocates).
// b.mu is held.
func (cn *pconn) noscript(b *Batch, k int, gen uint64) bool {
	rep, _, err := resp.Parse(b.cmd(cn.node, k))
	if err != nil || rep.Type != resp.TypeArray || rep.Len() < 2 {
		return false
	}
	it := rep.Iter()
	var a resp.Reply
	if !it.Next(&a) || !bytes.EqualFold(a.Data, evalshaName) || !it.Next(&a) {
		return false
	}
	s := cn.c.cfg.script(a.Data)
	if s == nil {
		return false
	}
	extra := resp.AppendArrayHeader(nil, rep.Len())
	extra = resp.AppendBulkString(extra, "EVAL")
	extra = resp.AppendBulkString(extra, s.Text)
	for it.Next(&a) {
		extra = append(extra, a.Raw...)
	}
	extra = resp.AppendCommand(extra, "SCRIPT", "LOAD", s.Text)
	at := mono()
	return cn.queueInternal(extra, slot{b: b, gen: gen, k: int32(k), exp: b.exp[cn.node][k], at: at}, slot{b: b, gen: gen, k: -1, exp: ExpectBulk, at: at})
}

// fail closes the connection for an error (reader side): every batch
// waiting on it learns at once, the node is marked down, and the
// supervisor redials it.
func (cn *pconn) fail(kind, cause error) {
	// The read state is reset before the connection is detached: once it
	// is, the supervisor may install a new one whose reader starts at once.
	rd := &cn.rd
	rd.r, rd.w = 0, 0
	if len(rd.buf) > initialReadBuf {
		rd.buf = nil // release a buffer grown by a large reply
	}
	slots, stashed := cn.detach(nil) // cold path: the slice may allocate
	ne := stashed
	if ne == nil {
		ne = cn.c.nodeErr(cn.node, kind, cause)
	}
	var err error = ne
	if cn.c.closed.Load() {
		err = cn.c.kinds[cn.node].closed
	} else {
		cn.c.markDown(cn.node, ne)
	}
	for _, s := range slots {
		if s.b == nil || s.k < 0 {
			continue
		}
		s.b.mu.Lock()
		if cl := &s.b.call; cl.gen == s.gen && cl.live {
			s.b.failNode(cn.node, err)
		}
		s.b.mu.Unlock()
	}
}
