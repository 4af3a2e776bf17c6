//go:build linux

package mux

import "runtime"

// arrival is a connection enter found with bytes nobody has read yet and
// no reply outstanding: it waits until a read turn of the connection that
// began after it looked has ended (ended reaches upTo), or until l is no
// longer the connection's link.
type arrival struct {
	cn   *pconn
	l    link
	upTo uint32
}

// enter runs before a caller's commands go out: bytes a node sent unasked
// (a stray reply) that arrived before the call must be judged while
// nothing of the call is outstanding on their connection, so that they
// break it (ErrProtocol) instead of passing for the call's reply. When no
// other caller waits and the token is free, the caller reads what arrived
// itself. When another holds the token (the poller's sweep, another
// caller's enter, a leader), the holder reads for everyone, but it may
// read after this caller queued its slots: so the caller looks, without
// reading, for connections with nothing outstanding and bytes unread, or
// a read turn of theirs in progress, and waits (yielding) until a read
// turn that began after its look has taken them; it reads them itself if
// the token comes free meanwhile. The token is not kept while the
// caller sends: a send may wait for queue room, which only the token
// holder (resuming a full socket's writes) can make.
//
// With followers waiting (several callers in Do), a caller does neither:
// the connections are in use, and a stray on one that owes replies is
// caught by reply kinds (Batch.AddExpect), if at all.
//
// The wait ends at the call's deadline (mono ns) whatever it waits for: a
// read turn that never comes must not hold Do past it. It reports whether
// it waited (Do then reads the clock again: past the deadline nothing is
// sent, so nothing of the call can meet the unjudged bytes).
func (d *tokenDriver) enter(deadline int64) bool {
	if d.waiters.Load() != 0 {
		return false
	}
	if d.tok.CompareAndSwap(false, true) {
		d.failed(d.set.poke()) // no sweep: the caller leads next, and sweeps there
		d.release()
		return false
	}
	d.awaitArrived(deadline)
	return true
}

// lookTries bounds enter's looks: a look is retried when a read turn
// began during it, which a connection read without pause (a node
// streaming push frames) can make happen every time.
const lookTries = 64

// awaitArrived is enter's wait when another holds the token.
func (d *tokenDriver) awaitArrived(deadline int64) {
	c := d.c
	d.look.Lock()
	defer d.look.Unlock()
	for try := 0; try < lookTries; try++ {
		if c.closed.Load() || d.waiters.Load() != 0 || mono() >= deadline {
			return
		}
		// Turns in progress on idle connections first: one may hold a
		// stray it has read and not yet judged, which no look can see.
		d.pend = d.pend[:0]
		if d.lookGen++; d.lookGen == 0 { // wrapped: no stale mark may match
			clear(d.noted)
			d.lookGen = 1
		}
		for i, cn := range c.conns {
			b, e := d.set.marks(cn)
			d.snap[i] = b
			if b != e {
				d.noteTurn(i, b)
			}
		}
		if len(d.pend) > 0 {
			d.strayWaits.Add(1)
			d.waitTurns(deadline)
			continue
		}
		if err := d.set.arrived(d.note); err != nil {
			return // the set broke: the holder fails every connection
		}
		// Turns that began during the look may have taken bytes from a
		// socket, which arrived then no longer saw, and not judged them
		// yet. On a connection arrived did not note, wait for those turns
		// to end (what they took is judged by then); on one it noted, a
		// turn may or may not have taken what arrived saw: look again.
		stable := true
		for i, cn := range c.conns {
			b, _ := d.set.marks(cn)
			if b == d.snap[i] {
				continue
			}
			if d.noted[i] == d.lookGen {
				stable = false
				break
			}
			d.noteTurn(i, b)
		}
		if stable {
			if len(d.pend) > 0 {
				d.strayWaits.Add(1)
				d.waitTurns(deadline)
			}
			return
		}
		runtime.Gosched()
	}
	// Out of tries (a noted connection read during every look): wait for
	// the token and read what arrived itself.
	d.strayWaits.Add(1)
	for !c.closed.Load() && d.waiters.Load() == 0 && mono() < deadline {
		if d.tok.CompareAndSwap(false, true) {
			d.after(d.set.poke())
			d.release()
			return
		}
		runtime.Gosched()
	}
}

// noteArrived is arrived's note: connection idx has unread bytes; it is
// waited for if nothing is outstanding on it.
func (d *tokenDriver) noteArrived(idx int) {
	if idx >= 0 && idx < len(d.c.conns) {
		d.noteTurn(idx, d.snap[idx]+1)
	}
}

// noteTurn adds connection idx to those waited for, until its read
// marks' ended reaches upTo, if it owes no reply and is not noted in this
// look yet (look held).
func (d *tokenDriver) noteTurn(idx int, upTo uint32) {
	if d.noted[idx] == d.lookGen {
		return
	}
	cn := d.c.conns[idx]
	cn.mu.Lock()
	l, idle := cn.link, cn.q.n == 0
	cn.mu.Unlock()
	if l == nil || !idle {
		return
	}
	d.noted[idx] = d.lookGen
	d.pend = append(d.pend, arrival{cn: cn, l: l, upTo: upTo})
}

// waitTurns waits until every connection of d.pend was read up to its
// mark, is gone, or the client closes, or until deadline (mono ns); when
// the token comes free it reads itself (look held).
func (d *tokenDriver) waitTurns(deadline int64) {
	c := d.c
	for _, a := range d.pend {
		for {
			if _, e := d.set.marks(a.cn); int32(e-a.upTo) >= 0 || c.closed.Load() || a.cn.current() != a.l {
				break
			}
			//mutant:enter-waits-past-deadline
			if mono() >= deadline {
				return
			}
			if d.tok.CompareAndSwap(false, true) {
				d.after(d.set.poke())
				d.release()
				continue
			}
			runtime.Gosched()
		}
	}
}
