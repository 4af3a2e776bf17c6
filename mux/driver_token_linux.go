//go:build linux

package mux

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// tokenDriver runs the read side of every connection of a client on raw
// non-blocking sockets, over a readySet that says what is ready: the epoll
// set (set_epoll_linux.go) or an io_uring (set_uring_linux.go, where the
// wait also submits the links' queued sends). Whoever waits on the set
// holds the reader token (tok) and reads for every connection: it parses
// replies, hands them to their batches, resumes writes that found a socket
// full and closes connections whose oldest outstanding reply is overdue.
type tokenDriver struct {
	c    *Client
	set  readySet
	efd  int // eventfd: readable once Close starts (wakes the holder, aborts dials)
	stop atomic.Bool
	wg   sync.WaitGroup

	// tok is the reader token. A caller of Do that finds no other caller
	// waiting and the token free takes it and reads its own replies (the
	// leader): the kernel wakes a lone caller directly, no goroutine
	// between. Callers that find it taken wait on their batch (followers),
	// woken by whoever holds it. The poller goroutine takes it when a
	// leader leaves with followers waiting, when a write waits for
	// writability, when a link was aborted, and every sweep interval
	// (reading first, so a quiet client's replies are not judged overdue).
	tok      atomic.Bool
	waiters  atomic.Int32  // callers in Do whose replies someone else must read
	outArmed atomic.Int32  // links waiting for writability
	busy     atomic.Int32  // closed links the set must still hear from (io_uring: entries in flight)
	kick     chan struct{} // cap 1: wakes the poller goroutine

	// direct is the direct-wait budget in ns (0: off). A holder parks in
	// the netpoller like any goroutine blocked on a socket (the set's park):
	// a thread blocked in a raw system call keeps its scheduler slot until
	// the runtime's monitor retakes it, up to 10 ms later (10-40 ms tails
	// with many callers on few cores). The one bounded exception: a leader
	// alone in Do blocks in the kernel (the set's waitFor) for up to this
	// budget (Config.DirectWait; DefaultDirectWait when 0 on TransportAuto's
	// epoll and on io_uring): its replies come within it, and the kernel
	// then wakes it without the netpoller's wake-up, park and unpark
	// (issue 24).
	direct int64

	// Followers' deadlines (driver_token_wait_linux.go): the registry, the
	// holder's published wait bound (mono ns) and the followers that kept
	// a timer because a holder's wait could outlast their deadline (tests).
	reg   waitReg
	bound atomic.Int64
	timed atomic.Int64

	// The token holder's.
	nextSweep  atomic.Int64 // mono ns (read by the poller without the token)
	sweepEvery int64

	// enter's look at what arrived while another holds the token (under
	// look): each connection's begun read mark before the look, the
	// connections found with unread bytes and nothing outstanding, and
	// note (d.noteArrived, bound once: no allocation per look).
	look       sync.Mutex
	snap       []uint32
	noted      []uint32 // per connection: the look that noted it (lookGen)
	lookGen    uint32
	pend       []arrival
	note       func(idx int)
	strayWaits atomic.Int64 // enters that waited for the holder to read what had arrived (tests)

	// Writes handed to the holder (handOff, endDelivery): while it
	// delivers what a wait returned (delivering), the callers its
	// replies woke queue their next commands and leave the writes to it.
	delivering atomic.Bool
	nHanded    atomic.Int32 // len(handed), read without hmu
	hmu        sync.Mutex   // handed, handSpare
	handed     []*pconn     // claimed writers to write at the delivery's end
	handSpare  []*pconn     // handed's other array (no allocation per drain)
	handHook   func()       // tests: runs in handOff between its look and its append
}

// handOff leaves the caller's claimed writers to the token's holder when
// it is delivering replies (the set's handle): the holder writes them all
// when the delivery ends (endDelivery), so the commands of every caller
// its replies woke leave in one write per connection instead of one write
// per claimer (which yields once, then writes, while the holder is still
// waking others). It reports whether it did; the caller then neither
// yields nor writes. A holder that ended its delivery before the claims
// were appended may have drained without them: the caller then writes
// them itself (flushClaimed does nothing for a claim already written).
//
// On 2 cores, 256 callers, 5 real servers: 0.24 instead of 0.37 socket
// writes per lock pair, and 5-8 % less client CPU per pair
// (results/cost/README.md, ninth session).
func (d *tokenDriver) handOff(claims []*pconn) bool {
	if !d.delivering.Load() {
		return false
	}
	if d.handHook != nil {
		d.handHook()
	}
	d.hmu.Lock()
	d.handed = append(d.handed, claims...)
	d.nHanded.Store(int32(len(d.handed)))
	d.hmu.Unlock()
	//mutant:handoff-stranded
	if !d.delivering.Load() {
		flushClaims(&claims)
	}
	return true
}

// endDelivery ends a delivery (token held): what callers handed over
// during it is written now.
func (d *tokenDriver) endDelivery() {
	d.delivering.Store(false)
	if d.nHanded.Load() == 0 {
		// Nothing handed: a hand-off still to come sees delivering false
		// after its count was stored, and writes its claims itself.
		return
	}
	d.hmu.Lock()
	h := d.handed
	d.handed, d.handSpare = d.handSpare[:0], nil
	d.nHanded.Store(0)
	d.hmu.Unlock()
	//mutant:handoff-never-written
	if len(h) > 0 {
		flushClaims(&h)
	}
	d.hmu.Lock()
	d.handSpare = h[:0]
	d.hmu.Unlock()
}

var _ driver = (*tokenDriver)(nil)
var _ awaiter = (*tokenDriver)(nil)

// leaderSlice bounds one wait of a leader whose ctx can be cancelled: it
// looks at ctx between waits. Chosen, not measured: a cancel is seen
// within 2ms, and a slice costs one wake-up per 2ms of waiting, nothing
// on the usual wait that ends sooner (lock replies come in well under a
// millisecond on a LAN: results/single-caller/README.md).
const leaderSlice = int64(2 * time.Millisecond)

// maxSweepEvery caps the poller's sweep interval (HardTimeout/4): a quiet
// client's connections are read, and overdue replies judged, at least this
// often. A variable only so that a test can leave the poller asleep and
// see what the token's holders alone do.
var maxSweepEvery = 100 * time.Millisecond

// newTokenDriver makes the driver state and the close eventfd; the caller
// sets set and then calls run.
func newTokenDriver(c *Client, direct time.Duration) (*tokenDriver, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, resourceErr(os.NewSyscallError("eventfd", err))
	}
	every := int64(c.cfg.HardTimeout / 4)
	every = min(max(every, int64(time.Millisecond)), int64(maxSweepEvery))
	d := &tokenDriver{
		c: c, efd: efd,
		kick:       make(chan struct{}, 1),
		sweepEvery: every,
		direct:     int64(direct),
		snap:       make([]uint32, len(c.conns)),
		noted:      make([]uint32, len(c.conns)),
		pend:       make([]arrival, 0, len(c.conns)),
	}
	d.note = d.noteArrived
	d.reg.init()
	d.nextSweep.Store(mono() + every)
	return d, nil
}

// run starts the poller goroutine (set is in place).
func (d *tokenDriver) run() {
	d.wg.Add(1)
	go d.poll()
}

// wake kicks the poller goroutine (it takes the token if it is free).
func (d *tokenDriver) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// needPoller reports whether someone must hold the token although no
// leader may: followers wait, a write waits for writability, or a closed
// link's entries must still be answered.
func (d *tokenDriver) needPoller() bool {
	return d.waiters.Load() > 0 || d.outArmed.Load() > 0 || d.busy.Load() > 0
}

// release gives the token back and hands the read side to the poller if
// it is still needed. What handling replies queued for the kernel (a
// receive re-armed, a NOSCRIPT resend) goes now: no wait of the holder's
// will take it.
func (d *tokenDriver) release() {
	d.set.flush()
	d.tok.Store(false)
	if d.needPoller() {
		d.wake()
	}
}

// await waits until b's call settles, deadline passes, ctx ends or the
// client closes. When no other caller waits and the token is free, the
// caller leads: it reads for every connection itself, and gives the token
// back when its own call has settled. Otherwise it follows: it waits on
// b.wake for whoever reads to deliver its replies.
func (d *tokenDriver) await(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	if d.waiters.Add(1) == 1 && d.tok.CompareAndSwap(false, true) {
		d.waiters.Add(-1)
		err := d.lead(ctx, b, deadline, ctxDeadline)
		d.release()
		return err
	}
	d.set.flush() // what this caller queued goes now: the holder may be waiting in the kernel
	if !d.tok.Load() {
		d.wake() // nobody reads: the poller must (release covers the other order)
	}
	err := d.followWait(ctx, b, deadline, ctxDeadline)
	d.waiters.Add(-1)
	return err
}

// sent runs after a caller queued its commands and before it waits (or
// returns, when its call settled on errors alone): what it queued must
// reach the kernel even if it never leads.
func (d *tokenDriver) sent(settled bool) {
	if settled {
		d.set.flush()
	}
}

// follow counts a caller waiting for queue room as a follower.
func (d *tokenDriver) follow(delta int32) {
	if delta > 0 {
		d.set.flush()
	}
	if d.waiters.Add(delta) > 0 && delta > 0 && !d.tok.Load() {
		d.wake()
	}
}

// lead reads for every connection until b's call settles (token held).
// While it is the only caller in Do, it first waits in the kernel
// directly, up to the direct budget from its first wait, then parks in
// the netpoller.
func (d *tokenDriver) lead(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	done := ctx.Done()
	direct := int64(-1) // mono ns the direct wait ends; -1: not started
	for {
		b.mu.Lock()
		settled := b.call.settled()
		need := b.call.need()
		b.mu.Unlock()
		if settled {
			return nil
		}
		if d.c.closed.Load() {
			return ErrClosed
		}
		now := mono() // the loop's one clock read: the sweep, the deadline and the waits use it
		d.sweep(now)
		if done != nil {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if now >= deadline {
			if ctxDeadline {
				return context.DeadlineExceeded
			}
			return nil
		}
		until := min(deadline, d.nextSweep.Load())
		if done != nil {
			until = min(until, now+leaderSlice)
		}
		until = d.waitBound(now, until)
		if direct < 0 {
			direct = now + d.direct
		}
		// Only a caller alone in Do waits directly: with others about, its
		// blocked thread would keep a P they need (and they bring replies
		// of their own for the leader to read, so it parks as before).
		if now < direct && d.c.active.Load() == 1 && d.waiters.Load() == 0 {
			if w := min(until, direct) - now; w > 0 {
				d.failed(d.set.waitFor(w, need))
			} else {
				d.failed(d.set.poke())
			}
		} else {
			d.failed(d.set.park(until))
		}
	}
}

// after handles a wait's error (the set broke: nothing can be read any
// more), then the overdue sweep when it is due (token held).
func (d *tokenDriver) after(err error) {
	if d.failed(err) {
		return
	}
	d.sweep(mono())
}

// failed handles a wait's error: the set broke, nothing can be read any
// more, so every connection fails (token held). It reports whether err was
// one.
func (d *tokenDriver) failed(err error) bool {
	if err == nil {
		return false
	}
	c := d.c
	if c.closed.Load() {
		return true
	}
	for _, cn := range c.conns {
		if l := cn.current(); l != nil {
			cn.fail(ErrConnBroken, err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	return true
}

// sweep fails the overdue connections when the sweep is due at now (mono
// ns; token held). A leader sweeps with its loop's clock reading; the
// poller after each wait.
func (d *tokenDriver) sweep(now int64) {
	if now < d.nextSweep.Load() {
		return
	}
	c := d.c
	limit := now - int64(c.cfg.HardTimeout)
	for _, cn := range c.conns {
		if cn.overdue(now, limit) {
			cn.fail(ErrNodeDown, errOverdue)
		}
	}
	d.nextSweep.Store(now + d.sweepEvery)
}

// poll is the poller goroutine: it holds the token while followers wait or
// a write waits for writability, and otherwise sleeps until kicked or the
// next sweep.
func (d *tokenDriver) poll() {
	defer d.wg.Done()
	c := d.c
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for !d.stop.Load() {
		if !c.closed.Load() && d.tok.CompareAndSwap(false, true) {
			d.after(d.set.poke()) // what arrived while nobody read, then the sweep if due
			for d.needPoller() && !c.closed.Load() {
				now := mono()
				d.sweep(now)
				d.failed(d.set.park(d.waitBound(now, d.nextSweep.Load())))
			}
			d.set.flush()
			d.tok.Store(false)
			if d.needPoller() && !c.closed.Load() {
				continue // a caller came between the last check and the release
			}
		}
		t.Reset(time.Duration(max(d.nextSweep.Load()-mono(), int64(time.Millisecond))))
		select {
		case <-d.kick:
			t.Stop() // go 1.23 timers: no stale tick after Stop or Reset
		case <-t.C:
		}
	}
	// Stopping: a leader still inside Do leaves at once (the client is
	// closed and efd is readable); then every connection fails.
	for !d.tok.CompareAndSwap(false, true) {
		time.Sleep(50 * time.Microsecond)
	}
	for _, cn := range c.conns {
		cn.fail(ErrNodeDown, ErrClosed)
	}
}

func (d *tokenDriver) dial(node, shard int) (link, error) { return d.set.dial(node, shard) }

var one = [8]byte{1}

func (d *tokenDriver) closing() {
	d.reg.wakeAll() // the followers (followWait), after Close set closed
	_, _ = unix.Write(d.efd, one[:])
}

func (d *tokenDriver) close() {
	d.stop.Store(true)
	d.wake()
	d.wg.Wait()
	d.set.close()
	_ = unix.Close(d.efd)
}
