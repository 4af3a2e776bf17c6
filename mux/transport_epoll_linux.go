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

// epollDriver runs the read side of every connection of a client: raw
// non-blocking sockets registered (level-triggered) with one epoll instance.
// Whoever waits on the epoll descriptor holds the reader token (tok) and
// reads for every connection: it parses replies, hands them to their
// batches, resumes writes that found a socket full (EPOLLOUT) and closes
// connections whose oldest outstanding reply is overdue.
//
// The token goes to a caller when it can: a caller of Do that finds no
// other caller waiting and the token free reads its own replies (the
// leader), so a lone caller is woken by the kernel directly, with no
// goroutine between it and its replies. Callers that find the token taken
// wait on their batch (followers) and are woken by whoever holds it. A
// poller goroutine per client takes the token when a leader leaves with
// followers still waiting, when a write waits for EPOLLOUT, when a link was
// aborted, and every sweep interval (it first reads what has arrived, so a
// quiet client's connections are not judged overdue on replies nobody read).
//
// Waiting mostly does not block an OS thread: the holder parks in the Go
// runtime's netpoller like any goroutine blocked on a socket (the
// epoller's park). A thread blocked in a raw syscall keeps its scheduler
// slot until the runtime's monitor retakes it, up to 10 ms later: with
// many callers on few cores that showed up as 10-40 ms tail latencies. The
// one exception is opt-in and bounded: with Config.DirectWait set, a
// leader alone in Do blocks in epoll_pwait2 for up to that long, because a
// lone caller's replies come within it and the kernel then wakes it
// directly, without the netpoller's wake-up, park and unpark (issue 24:
// about 7 fewer system calls per acquire+release pair).
type epollDriver struct {
	c    *Client
	ep   *epoller // the sockets and efd (poller_epoll_linux.go)
	efd  int      // eventfd in the epoll set: readable once Close starts (wakes the holder, aborts dials)
	stop atomic.Bool
	wg   sync.WaitGroup

	tok      atomic.Bool   // the reader token
	waiters  atomic.Int32  // callers in Do whose replies someone else must read
	outArmed atomic.Int32  // links waiting for writability
	kick     chan struct{} // cap 1: wakes the poller goroutine

	direct int64 // Config.DirectWait in ns (0: off)

	// The token holder's.
	nextSweep  atomic.Int64 // mono ns (read by the poller without the token)
	sweepEvery int64
}

var _ driver = (*epollDriver)(nil)
var _ awaiter = (*epollDriver)(nil)

// wakeTag marks the eventfd's epoll events.
const wakeTag = -1

// leaderSlice bounds one wait of a leader whose ctx can be cancelled: it
// looks at ctx between waits. Chosen, not measured: a cancel is seen
// within 2ms, and a slice costs one wake-up per 2ms of waiting, nothing
// on the usual wait that ends sooner (lock replies come in well under a
// millisecond on a LAN: results/single-caller/README.md).
const leaderSlice = int64(2 * time.Millisecond)

func newEpollDriver(c *Client) (*epollDriver, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	ep, err := newEpoller(len(c.conns) + 1)
	if err != nil {
		_ = unix.Close(efd)
		return nil, err
	}
	if err := ep.add(efd, wakeTag, unix.EPOLLIN); err != nil {
		ep.close()
		_ = unix.Close(efd)
		return nil, err
	}
	every := int64(c.cfg.HardTimeout / 4)
	every = min(max(every, int64(time.Millisecond)), int64(100*time.Millisecond))
	d := &epollDriver{
		c: c, ep: ep, efd: efd,
		kick:       make(chan struct{}, 1),
		sweepEvery: every,
		direct:     int64(c.cfg.DirectWait),
	}
	d.nextSweep.Store(mono() + every)
	d.wg.Add(1)
	go d.poll()
	return d, nil
}

// wake kicks the poller goroutine (it takes the token if it is free).
func (d *epollDriver) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// needPoller reports whether someone must hold the token although no
// leader may: followers wait, or a write waits for writability.
func (d *epollDriver) needPoller() bool { return d.waiters.Load() > 0 || d.outArmed.Load() > 0 }

// release gives the token back and hands the read side to the poller if
// it is still needed.
func (d *epollDriver) release() {
	d.tok.Store(false)
	if d.needPoller() {
		d.wake()
	}
}

// enter runs before a caller's commands go out. When no other caller
// waits and the token is free, it reads what arrived while nobody read (one
// zero-timeout epoll_wait), so bytes a node sent unasked are found while
// nothing is outstanding on that connection and are not taken for the
// replies to the commands about to be sent. The token is not kept while
// the caller sends: a send may wait for queue room, which only the token
// holder (resuming a full socket's writes) can make.
func (d *epollDriver) enter() {
	if d.waiters.Load() != 0 || !d.tok.CompareAndSwap(false, true) {
		return
	}
	n, err := d.ep.poke()
	d.process(n, err)
	d.release()
}

// await waits until b's call settles, deadline passes, ctx ends or the
// client closes. When no other caller waits and the token is free, the
// caller leads: it reads for every connection itself, and gives the token
// back when its own call has settled. Otherwise it follows: it waits on
// b.wake for whoever reads to deliver its replies.
func (d *epollDriver) await(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	if d.waiters.Add(1) == 1 && d.tok.CompareAndSwap(false, true) {
		d.waiters.Add(-1)
		err := d.lead(ctx, b, deadline, ctxDeadline)
		d.release()
		return err
	}
	if !d.tok.Load() {
		d.wake() // nobody reads: the poller must (release covers the other order)
	}
	err := b.wait(ctx, deadline, ctxDeadline, d.c.done)
	d.waiters.Add(-1)
	return err
}

// follow counts a caller waiting for queue room as a follower.
func (d *epollDriver) follow(delta int32) {
	if d.waiters.Add(delta) > 0 && delta > 0 && !d.tok.Load() {
		d.wake()
	}
}

// lead reads for every connection until b's call settles (token held).
// While it is the only caller in Do, it first waits in the kernel
// directly, up to DirectWait from its first wait, then parks in the
// netpoller.
func (d *epollDriver) lead(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	done := ctx.Done()
	direct := int64(-1) // mono ns the direct wait ends; -1: not started
	for {
		b.mu.Lock()
		settled := b.call.settled()
		b.mu.Unlock()
		if settled {
			return nil
		}
		if d.c.closed.Load() {
			return ErrClosed
		}
		now := mono()
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
		if direct < 0 {
			direct = now + d.direct
		}
		var n int
		var err error
		// Only a caller alone in Do waits directly: with others about, its
		// blocked thread would keep a P they need (and they bring replies
		// of their own for the leader to read, so it parks as before).
		if now < direct && d.c.active.Load() == 1 && d.waiters.Load() == 0 {
			n, err = d.ep.waitFor(min(until, direct) - now)
		} else {
			n, err = d.ep.park(until)
		}
		d.process(n, err)
	}
}

// process runs n ready events, then the overdue sweep when it is due
// (token held).
func (d *epollDriver) process(n int, err error) {
	c := d.c
	if err != nil {
		if c.closed.Load() {
			return
		}
		// epoll itself failed: nothing can be read any more.
		for _, cn := range c.conns {
			if l := cn.current(); l != nil {
				cn.fail(ErrConnBroken, err)
			}
		}
		time.Sleep(10 * time.Millisecond)
		return
	}
	for _, e := range d.ep.events[:n] {
		if e.Fd == wakeTag {
			continue
		}
		cn := c.conns[e.Fd]
		l := cn.current()
		if l == nil {
			continue
		}
		if e.Events&unix.EPOLLOUT != 0 {
			cn.writable()
		}
		if e.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			cn.readable(l)
		}
	}
	if now := mono(); now >= d.nextSweep.Load() {
		limit := now - int64(c.cfg.HardTimeout)
		for _, cn := range c.conns {
			if cn.overdue(limit) {
				cn.fail(ErrNodeDown, errOverdue)
			}
		}
		d.nextSweep.Store(now + d.sweepEvery)
	}
}

// poll is the poller goroutine: it holds the token while followers wait or
// a write waits for writability, and otherwise sleeps until kicked or the
// next sweep.
func (d *epollDriver) poll() {
	defer d.wg.Done()
	c := d.c
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for !d.stop.Load() {
		if !c.closed.Load() && d.tok.CompareAndSwap(false, true) {
			n, err := d.ep.poke() // what arrived while nobody read, then the sweep if due
			d.process(n, err)
			for d.needPoller() && !c.closed.Load() {
				n, err := d.ep.park(d.nextSweep.Load())
				d.process(n, err)
			}
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

func (d *epollDriver) dial(node int) (link, error) {
	fd, rest, err := d.c.dialRaw(node, d.efd)
	if err != nil {
		return nil, err
	}
	return &rawLink{d: d, fd: fd, pre: rest}, nil
}

var one = [8]byte{1}

func (d *epollDriver) closing() { _, _ = unix.Write(d.efd, one[:]) }

func (d *epollDriver) close() {
	d.stop.Store(true)
	d.wake()
	d.wg.Wait()
	d.ep.close()
	_ = unix.Close(d.efd)
}
