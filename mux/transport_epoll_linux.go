//go:build linux

package mux

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
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
// Waiting does not block an OS thread in epoll_wait: the epoll descriptor
// is itself pollable, so it is registered with the Go runtime's netpoller
// (as a non-blocking *os.File) and the holder parks there like any
// goroutine blocked on a socket; epoll_wait is only called with a zero
// timeout, to collect ready events. (A thread blocked in a raw syscall
// keeps its scheduler slot until the runtime's monitor retakes it, up to
// 10 ms later: with many callers on few cores that showed up as 10-40 ms
// tail latencies.)
type epollDriver struct {
	c      *Client
	epfd   int
	efd    int // eventfd in the epoll set: readable once Close starts (wakes the holder, aborts dials)
	stop   atomic.Bool
	epFile *os.File // owns epfd; registered with the netpoller
	epRaw  syscall.RawConn
	pollFn func(uintptr) bool
	wg     sync.WaitGroup

	tok      atomic.Bool   // the reader token
	waiters  atomic.Int32  // callers in Do whose replies someone else must read
	outArmed atomic.Int32  // links waiting for writability
	kick     chan struct{} // cap 1: wakes the poller goroutine

	// The token holder's.
	nev        int
	perr       error
	events     []unix.EpollEvent
	nextSweep  atomic.Int64 // mono ns (read by the poller without the token)
	sweepEvery int64
}

var _ driver = (*epollDriver)(nil)
var _ awaiter = (*epollDriver)(nil)
var _ link = (*rawLink)(nil)

// wakeTag marks the eventfd's epoll events.
const wakeTag = -1

// leaderSlice bounds one wait of a leader whose ctx can be cancelled: it
// looks at ctx between waits.
const leaderSlice = int64(2 * time.Millisecond)

const (
	evIn  = unix.EPOLLIN | unix.EPOLLRDHUP
	evOut = unix.EPOLLOUT
)

func newEpollDriver(c *Client) (*epollDriver, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(efd)
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	fail := func(err error) (*epollDriver, error) {
		_ = unix.Close(epfd)
		_ = unix.Close(efd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeTag}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		return fail(os.NewSyscallError("epoll_ctl", err))
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		return fail(os.NewSyscallError("fcntl", err))
	}
	epFile := os.NewFile(uintptr(epfd), "redmux-epoll") // pollable: epfd is non-blocking
	epRaw, err := epFile.SyscallConn()
	if err != nil {
		_ = epFile.Close()
		_ = unix.Close(efd)
		return nil, err
	}
	every := int64(c.cfg.HardTimeout / 4)
	every = min(max(every, int64(time.Millisecond)), int64(100*time.Millisecond))
	d := &epollDriver{
		c: c, epfd: epfd, efd: efd, epFile: epFile, epRaw: epRaw,
		kick:       make(chan struct{}, 1),
		events:     make([]unix.EpollEvent, len(c.conns)+1),
		sweepEvery: every,
	}
	d.nextSweep.Store(mono() + every)
	d.pollFn = d.harvest // bound once: Read takes it without allocating
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
	n, err := d.poke()
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
func (d *epollDriver) lead(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	done := ctx.Done()
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
		n, err := d.wait(until)
		d.process(n, err)
	}
}

// harvest collects ready events without blocking; false asks the netpoller
// to park the holder until the epoll descriptor is readable.
func (d *epollDriver) harvest(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), d.events, 0)
	switch {
	case err == unix.EINTR:
		return false
	case err != nil:
		d.perr = err
		return true
	case n == 0:
		return false
	}
	d.nev = n
	return true
}

// wait returns the ready events, parking in the netpoller until one
// arrives or deadline (mono ns) passes (then 0 events, nil error).
func (d *epollDriver) wait(deadline int64) (int, error) {
	d.nev, d.perr = 0, nil
	if err := d.epFile.SetReadDeadline(monoBase.Add(time.Duration(deadline))); err != nil {
		return 0, err
	}
	if err := d.epRaw.Read(d.pollFn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	return d.nev, d.perr
}

// poke collects the events ready now, without waiting.
func (d *epollDriver) poke() (int, error) {
	for {
		n, err := unix.EpollWait(d.epfd, d.events, 0)
		if err == unix.EINTR {
			continue
		}
		return n, err
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
				cn.fail(ErrConnBroken, os.NewSyscallError("epoll_wait", err))
			}
		}
		time.Sleep(10 * time.Millisecond)
		return
	}
	for _, e := range d.events[:n] {
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
			n, err := d.poke() // what arrived while nobody read, then the sweep if due
			d.process(n, err)
			for d.needPoller() && !c.closed.Load() {
				n, err := d.wait(d.nextSweep.Load())
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
	_ = d.epFile.Close() // closes epfd
	_ = unix.Close(d.efd)
}

// rawLink is a raw non-blocking socket watched by the driver's epoll.
type rawLink struct {
	d     *epollDriver
	fd    int
	tag   int32
	outOn bool
	gone  atomic.Bool
	pre   []byte // read past the set-up replies (push frames): read first
}

func (l *rawLink) write(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		n, err := unix.Write(l.fd, p[w:])
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return w, nil
		case err != nil:
			return w, os.NewSyscallError("write", err)
		default:
			w += n
		}
	}
	return w, nil
}

func (l *rawLink) read(p []byte) (int, error) {
	if len(l.pre) > 0 {
		n := copy(p, l.pre)
		l.pre = l.pre[n:]
		return n, nil
	}
	for {
		n, err := unix.Read(l.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		}
		return n, nil
	}
}

func (l *rawLink) nonBlocking() bool { return true }

func (l *rawLink) start(cn *pconn) error {
	l.tag = int32(cn.idx)
	ev := unix.EpollEvent{Events: evIn, Fd: l.tag}
	if err := unix.EpollCtl(l.d.epfd, unix.EPOLL_CTL_ADD, l.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (l *rawLink) wantWrite(on bool) error {
	if on == l.outOn {
		return nil
	}
	ev := unix.EpollEvent{Events: evIn, Fd: l.tag}
	if on {
		ev.Events |= evOut
	}
	if err := unix.EpollCtl(l.d.epfd, unix.EPOLL_CTL_MOD, l.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	l.outOn = on
	if on {
		l.d.outArmed.Add(1)
		l.d.wake() // someone must hold the token to see EPOLLOUT
	} else {
		l.d.outArmed.Add(-1)
	}
	return nil
}

func (l *rawLink) unregister() {
	_ = unix.EpollCtl(l.d.epfd, unix.EPOLL_CTL_DEL, l.fd, nil)
	if l.outOn {
		l.outOn = false
		l.d.outArmed.Add(-1)
	}
}

func (l *rawLink) abort() {
	if !l.gone.Load() {
		_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
		l.d.wake() // the token holder sees the hang-up and fails the connection
	}
}

func (l *rawLink) close() {
	if !l.gone.Swap(true) {
		_ = unix.Close(l.fd)
	}
}
