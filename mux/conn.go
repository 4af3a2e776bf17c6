package mux

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// writerYield is how a claimed writer lets other callers append between
// two writes (writeLocked); tests replace it.
var writerYield = runtime.Gosched

// shortWrites counts writes that found the socket full, sockWrites every
// write to a socket (for tests).
var shortWrites, sockWrites atomic.Int64

// This file holds one connection's write side: commands of concurrent
// batches are queued in one buffer and written together (write combining),
// and each queued command leaves a reply slot in a FIFO, in send order
// (slots.go). The read side (ingest.go) pops the slots as replies arrive.

// pconn is one connection to one node, shared by every caller. mu guards
// everything but the read buffer, which belongs to the reader side (the
// epoll poller, or the connection's reader goroutine).
type pconn struct {
	c     *Client
	node  int
	shard int // a cluster node's shard index (0 for any other node)
	idx   int // index in Client.conns, the poller's tag

	mu       sync.Mutex
	link     link // nil while down
	gen      uint64
	wq       []byte     // queued bytes, not yet handed to the socket
	inflight int        // bytes a writer is handing to the socket now (mu released); count against MaxQueuedBytes
	spare    []byte     // the other write buffer
	writing  bool       // a writer owns the socket (in write, or waiting for writability)
	claimed  bool       // writing, by a caller that lets others append before it writes (flushClaimed)
	inWrite  bool       // a writer is inside link.write, mu released
	waitOut  bool       // the socket was full: the reader side resumes writing when writable
	deferred link       // closed by the writer when its write returns (the connection broke meanwhile)
	cause    *NodeError // why the connection is being aborted (write error, overdue), for the reader side
	q        slotRing
	arrived  uint64        // replies read so far (the reader counts them; no clock is read per reply)
	seen     uint64        // arrived as the overdue sweep last saw it
	seenAt   int64         // mono time of the sweep that first saw arrived at seen
	room     chan struct{} // closed when queued bytes drop below the cap (back-pressure)

	rd reader // read side; owned by the reader

	// pend: shared commands waiting for the next write (shared.go), their
	// bytes in pendBytes; mu
	pend      []*sharedGroup
	pendBytes int
}

// send queues node's commands of b (call generation gen) and writes them
// unless another caller is writing: that caller, or the reader side once the
// socket is writable, writes them with its own. It returns the node's error
// when they cannot be queued: the connection is down, or the queue stays
// full until deadline: MaxQueuedBytes unwritten (the bytes a writer is
// handing to the socket count too), or MaxPending replies outstanding.
//
// With hold set (other callers are active) a caller that would write
// instead claims the writer role and returns claimed: it lets the others
// run and append to the queue, then writes everything with flushClaimed.
// Callers that find the role claimed only append. So commands of callers
// that run back to back leave in one write instead of one write each.
//
// held are the caller's claims on other connections: before it waits for
// room here it writes them, so that no caller waits on a queue while
// holding back another's. With nowait set it does not wait: a full queue
// returns errMustWait (Do first sends to every node with room, then waits
// for the full ones, so a slow node does not hold back the others).
func (cn *pconn) send(b *Batch, gen uint64, deadline int64, done <-chan struct{}, hold, nowait bool, held *[]*pconn) (claimed bool, err error) {
	cmds := b.cmds[cn.node]
	cn.mu.Lock()
	for {
		if cn.link == nil {
			cn.mu.Unlock()
			return false, cn.c.nodes[cn.node].downErr.Load()
		}
		full := cn.full(b.size[cn.node], len(cmds))
		if full == nil {
			break
		}
		if nowait {
			cn.mu.Unlock()
			return false, errMustWait
		}
		// Back-pressure: wait for room, bounded by the batch deadline.
		if cn.room == nil {
			cn.room = make(chan struct{})
		}
		room := cn.room
		cn.mu.Unlock()
		flushClaims(held)
		// Replies make room (MaxPending), and this caller's other nodes
		// may answer meanwhile: someone must read while it waits.
		aw, _ := cn.c.drv.(awaiter)
		if aw != nil {
			aw.follow(1)
		}
		ok := waitRoom(room, deadline, done)
		if aw != nil {
			aw.follow(-1)
		}
		if !ok {
			return false, &NodeError{Node: cn.node, Addr: cn.c.nodes[cn.node].addr, Kind: ErrTimeout, Cause: full}
		}
		cn.mu.Lock()
	}
	n := b.unshared(cn.node)
	for k, e := range b.exp[cn.node][:n] {
		cn.q.push(slot{b: b, gen: gen, k: int32(k), exp: e, at: deadline})
		cn.wq = append(cn.wq, b.cmd(cn.node, k)...)
	}
	for k := n; k < len(cmds); k++ {
		cn.share(b, gen, k, deadline) // sent at the next take (writeLocked)
	}
	if !cn.writing {
		cn.writing = true
		if hold {
			cn.claimed = true
			cn.mu.Unlock()
			return true, nil
		}
		cn.writeLocked(false)
	}
	cn.mu.Unlock()
	return false, nil
}

// full reports why nb more bytes in ns more slots cannot be queued now
// (errQueueFull, errTooManyPending), or nil. A lone batch larger than a cap
// still goes when nothing is queued or outstanding. The bytes of a write
// in progress count only while a reply is outstanding: with none, they
// were all answered, and the writer is only not back yet (the NOSCRIPT
// fallback, sent from the reader's path, used to be refused while the
// write that carried the EVALSHA was returning). Unwritten bytes always
// count: a node may answer what it has not read. mu held.
func (cn *pconn) full(nb, ns int) error {
	cfg := cn.c.cfg
	if q := cn.queuedBytes(); q > 0 && q+nb > cfg.MaxQueuedBytes {
		return errQueueFull
	}
	if q := cn.q.n + len(cn.pend); q > 0 && q+ns > cfg.MaxPending {
		return errTooManyPending
	}
	return nil
}

// queuedBytes is what counts against MaxQueuedBytes (full, freeRoom): the
// unwritten bytes (shared commands' too), and those of a write in
// progress while a reply is outstanding (with none, they were all
// answered). mu held.
func (cn *pconn) queuedBytes() int {
	if cn.q.n > 0 {
		return len(cn.wq) + cn.pendBytes + cn.inflight
	}
	return len(cn.wq) + cn.pendBytes
}

// flushClaims writes every claimed connection of *held and empties it.
func flushClaims(held *[]*pconn) {
	for k, cn := range *held {
		cn.flushClaimed()
		(*held)[k] = nil
	}
	*held = (*held)[:0]
}

// flushClaimed writes what a claimed writer role holds queued. The claim
// may be gone (the connection was detached meanwhile, which failed the
// queued slots) or already flushed by another claimer: then there is
// nothing to do.
func (cn *pconn) flushClaimed() {
	cn.mu.Lock()
	if cn.claimed {
		cn.claimed = false
		cn.writeLocked(true)
	}
	cn.mu.Unlock()
}

// queueInternal queues extra bytes with their slots (the NOSCRIPT fallback,
// a cluster redirect) and writes them like send. It reports false if the
// connection is down or its queue is full (MaxQueuedBytes, MaxPending, as
// for send): it runs on the reader's path, which must not wait for room,
// so the reply that asked for it is then delivered as the error it is.
func (cn *pconn) queueInternal(extra []byte, slots ...slot) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.link == nil || cn.full(len(extra), len(slots)) != nil {
		return false
	}
	for _, s := range slots {
		cn.q.push(s)
	}
	cn.wq = append(cn.wq, extra...)
	if !cn.writing {
		cn.writing = true
		cn.writeLocked(false)
	}
	return true
}

// writeLocked writes the queue until it is empty or the socket is full.
// Called with mu held and writing set; returns with mu held. While the
// write syscall runs mu is released, and other callers append to the queue:
// the loop writes what they appended too.
//
// A claimed writer (yield: a caller among others in Do, flushClaimed)
// that finds more queued after a write yields once before writing it, as
// it did before its first write: the callers its write let run append
// theirs meanwhile, and the next write carries them all. At 256 callers on
// 2 cores that halved the writes per SET (BenchmarkSet256; results/cost).
// It yields as if inside write (inWrite): the role stays its own, and a
// detach meanwhile leaves the socket's close to it, as during a write.
func (cn *pconn) writeLocked(yield bool) {
	cn.flushShared()
	for len(cn.wq) > 0 {
		l := cn.link
		if l == nil {
			break
		}
		buf := cn.wq
		cn.wq = cn.spare[:0]
		cn.inWrite = true
		cn.inflight = len(buf)
		cn.mu.Unlock()
		n, err := l.write(buf)
		sockWrites.Add(1)
		cn.mu.Lock()
		cn.inWrite = false
		cn.inflight = 0
		if cn.closeDeferred(l) {
			cn.spare = buf[:0]
			continue
		}
		if err != nil {
			cn.spare = buf[:0]
			cn.wq = cn.wq[:0]
			cn.abortLocked(l, ErrConnBroken, err)
			break
		}
		if n < len(buf) {
			// Socket full: keep the rest in front of what was queued since,
			// and let the reader side resume when the socket is writable.
			shortWrites.Add(1)
			rest := copy(buf, buf[n:])
			buf = append(buf[:rest], cn.wq...)
			cn.spare = cn.wq[:0]
			cn.wq = buf
			cn.waitOut = true
			if err := l.wantWrite(true); err != nil {
				cn.abortLocked(l, ErrConnBroken, err)
			}
			cn.freeRoom()
			return // still writing: the reader side owns the next write
		}
		cn.spare = buf[:0]
		if yield && len(cn.wq) > 0 {
			//mutant:writer-yield-drops-role
			cn.inWrite = true
			cn.mu.Unlock()
			writerYield()
			cn.mu.Lock()
			cn.inWrite = false
			if cn.closeDeferred(l) {
				continue
			}
		}
		cn.flushShared() // behind what the others queued during the write
	}
	cn.writing = false
	cn.freeRoom()
}

// closeDeferred closes l if the connection broke while this writer was
// inside write or its yield and the reader side left the close to it (the
// fd must not be reused while it is written to). What is queued then
// belongs to the next connection, if one is installed already: the writer
// goes on with it. mu held.
func (cn *pconn) closeDeferred(l link) bool {
	if cn.deferred != l {
		return false
	}
	cn.deferred = nil
	l.close()
	return true
}

// writable resumes writing after the socket reported space (reader side).
func (cn *pconn) writable() {
	cn.mu.Lock()
	if cn.waitOut && cn.link != nil {
		cn.waitOut = false
		if err := cn.link.wantWrite(false); err != nil {
			cn.abortLocked(cn.link, ErrConnBroken, err)
		} else {
			cn.writeLocked(false)
		}
	}
	cn.mu.Unlock()
}

// freeRoom wakes callers waiting for queue space once it is below the
// caps (bytes queued or being written, replies outstanding). mu held.
func (cn *pconn) freeRoom() {
	if cn.room != nil && cn.queuedBytes() < cn.c.cfg.MaxQueuedBytes && cn.q.n+len(cn.pend) < cn.c.cfg.MaxPending {
		close(cn.room)
		cn.room = nil
	}
}

// abortLocked records why l must go and makes the reader side notice soon
// (it closes the connection and fails its slots). mu held.
func (cn *pconn) abortLocked(l link, kind, cause error) {
	if cn.link != l || l == nil {
		return
	}
	if cn.cause == nil {
		cn.cause = cn.c.nodeErr(cn.node, kind, cause)
	}
	l.abort()
}

// abort is abortLocked for a caller without mu (the sweeper).
func (cn *pconn) abort(kind, cause error) {
	cn.mu.Lock()
	cn.abortLocked(cn.link, kind, cause)
	cn.mu.Unlock()
}

// detach takes the connection away (reader side): no new commands are
// queued on it, every outstanding slot is returned for failing, and the
// socket is closed now or, when a writer is inside write, by that writer.
func (cn *pconn) detach(into []slot) ([]slot, *NodeError) {
	cn.mu.Lock()
	l := cn.link
	cause := cn.cause
	cn.link, cn.cause = nil, nil
	for cn.q.n > 0 {
		if s := cn.q.pop(); s.grp != nil {
			into = expand(into, s.grp)
		} else {
			into = append(into, s)
		}
	}
	for i, g := range cn.pend {
		into = expand(into, g)
		cn.pend[i] = nil
	}
	cn.pend, cn.pendBytes = cn.pend[:0], 0
	cn.wq = cn.wq[:0]
	cn.waitOut = false
	if !cn.inWrite {
		cn.writing = false // else the writer inside write clears it (see writeLocked)
	}
	cn.claimed = false
	if cn.room != nil {
		close(cn.room)
		cn.room = nil
	}
	if l != nil {
		l.unregister()
		// Only the first socket detached under a writer can be the one it
		// writes to: a socket installed and detached again meanwhile (its
		// yield, writeLocked) is closed now, or nobody would close it.
		//mutant:double-detach-deferred
		if cn.inWrite && cn.deferred == nil {
			cn.deferred = l
		} else {
			l.close()
		}
	}
	cn.mu.Unlock()
	return into, cause
}

// install makes l the connection's socket (New or the supervisor) and
// starts reading it.
func (cn *pconn) install(l link) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.c.closed.Load() {
		l.close()
		return ErrClosed
	}
	cn.link = l
	cn.gen++
	if err := l.start(cn); err != nil {
		cn.link = nil
		l.close()
		return err
	}
	return nil
}

// current returns the connection's socket, nil while down.
func (cn *pconn) current() link {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.link
}

// overdue is the sweep's look at the connection at now (mono ns): it
// reports whether the connection owes replies and has made no progress
// since limit (now - HardTimeout): the deadline of its oldest outstanding
// reply's batch passed before limit and no reply arrived since. A long
// pipeline that keeps answering is not overdue; a node that stopped
// answering is. The reader only counts replies; the sweep dates a change
// of the count when it first sees it, so progress is known to a sweep's
// interval (HardTimeout/4 at most): a node that stops is found overdue
// that much later at most, never earlier.
func (cn *pconn) overdue(now, limit int64) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.arrived != cn.seen {
		cn.seen, cn.seenAt = cn.arrived, now
	}
	return cn.link != nil && cn.q.n > 0 && cn.q.front().at < limit && cn.seenAt < limit
}

// waitRoom waits until room is closed, deadline (mono ns) passes, or done
// is closed; it reports whether room came.
func waitRoom(room <-chan struct{}, deadline int64, done <-chan struct{}) bool {
	d := deadline - mono()
	if d <= 0 {
		return false
	}
	t := newTimer(d)
	defer t.Stop()
	select {
	case <-room:
		return true
	case <-t.C:
		return false
	case <-done:
		return false
	}
}
