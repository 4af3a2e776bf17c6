//go:build linux

package mux

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// epollDriver reads every connection of a client with one poller
// goroutine: raw non-blocking sockets registered (level-triggered) with
// one epoll instance. The poller does not block its OS thread in
// epoll_wait: the epoll descriptor is itself pollable, so it is registered
// with the Go runtime's netpoller (as a non-blocking *os.File) and the
// poller parks there like any goroutine blocked on a socket; epoll_wait is
// only called with a zero timeout, to collect ready events. (A thread
// blocked in a raw syscall keeps its scheduler slot until the runtime's
// monitor retakes it, up to 10 ms later: with many callers on few cores
// that showed up as 10-40 ms tail latencies.)
//
// The poller reads replies and hands them to the waiting batches, resumes
// writes that found a socket full (EPOLLOUT), and every HardTimeout/4
// closes connections whose oldest outstanding reply is overdue. Callers
// write straight to the sockets themselves (conn.go).
type epollDriver struct {
	c      *Client
	epfd   int
	efd    int // eventfd: readable once Close starts (aborts dials in progress)
	stopfd int // eventfd in the epoll set: readable once the poller must stop
	stop   atomic.Bool
	epFile *os.File // owns epfd; registered with the netpoller
	epRaw  syscall.RawConn
	pollFn func(uintptr) bool
	nev    int
	perr   error
	events []unix.EpollEvent
	wg     sync.WaitGroup
}

var _ driver = (*epollDriver)(nil)
var _ link = (*rawLink)(nil)

// wakeTag marks the eventfd's epoll events.
const wakeTag = -1

const (
	evIn  = unix.EPOLLIN | unix.EPOLLRDHUP
	evOut = unix.EPOLLOUT
)

func newEpollDriver(c *Client) (*epollDriver, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(efd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(efd)
		_ = unix.Close(stopfd)
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	fail := func(err error) (*epollDriver, error) {
		_ = unix.Close(epfd)
		_ = unix.Close(efd)
		_ = unix.Close(stopfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeTag}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stopfd, &ev); err != nil {
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
		_ = unix.Close(stopfd)
		return nil, err
	}
	d := &epollDriver{
		c: c, epfd: epfd, efd: efd, stopfd: stopfd, epFile: epFile, epRaw: epRaw,
		events: make([]unix.EpollEvent, len(c.conns)+1),
	}
	d.pollFn = d.harvest // bound once: Read takes it without allocating
	d.wg.Add(1)
	go d.poll()
	return d, nil
}

// harvest collects ready events without blocking; false asks the netpoller
// to park the poller until the epoll descriptor is readable.
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

// poll is the poller goroutine.
func (d *epollDriver) poll() {
	defer d.wg.Done()
	c := d.c
	sweepEvery := int64(c.cfg.HardTimeout / 4)
	sweepEvery = min(max(sweepEvery, int64(time.Millisecond)), int64(100*time.Millisecond))
	nextSweep := mono() + sweepEvery
	for !d.stop.Load() {
		n, err := d.wait(nextSweep)
		if err != nil {
			// epoll itself failed: nothing can be read any more.
			for _, cn := range c.conns {
				if l := cn.current(); l != nil {
					cn.fail(ErrConnBroken, os.NewSyscallError("epoll_wait", err))
				}
			}
			time.Sleep(10 * time.Millisecond)
			continue
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
		if now := mono(); now >= nextSweep {
			limit := now - int64(c.cfg.HardTimeout)
			for _, cn := range c.conns {
				if cn.overdue(limit) {
					cn.fail(ErrNodeDown, errOverdue)
				}
			}
			nextSweep = now + sweepEvery
		}
	}
	for _, cn := range c.conns {
		cn.fail(ErrNodeDown, ErrClosed)
	}
}

func (d *epollDriver) dial(node int) (link, error) {
	fd, err := d.c.dialRaw(node, d.efd)
	if err != nil {
		return nil, err
	}
	return &rawLink{d: d, fd: fd}, nil
}

var one = [8]byte{1}

func (d *epollDriver) closing() { _, _ = unix.Write(d.efd, one[:]) }

func (d *epollDriver) close() {
	d.stop.Store(true)
	_, _ = unix.Write(d.stopfd, one[:])
	d.wg.Wait()
	_ = d.epFile.Close() // closes epfd
	_ = unix.Close(d.efd)
	_ = unix.Close(d.stopfd)
}

// rawLink is a raw non-blocking socket watched by the driver's epoll.
type rawLink struct {
	d     *epollDriver
	fd    int
	tag   int32
	outOn bool
	gone  atomic.Bool
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
	return nil
}

func (l *rawLink) unregister() { _ = unix.EpollCtl(l.d.epfd, unix.EPOLL_CTL_DEL, l.fd, nil) }

func (l *rawLink) abort() {
	if !l.gone.Load() {
		_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
	}
}

func (l *rawLink) close() {
	if !l.gone.Swap(true) {
		_ = unix.Close(l.fd)
	}
}
