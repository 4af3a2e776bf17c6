//go:build linux

package mux

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// epoller is one epoll instance (the inner set: the sockets and the
// close eventfd, level-triggered) and every system call made on it, each
// with its own label in errors (as gnet's poller names one method per
// change). Two ways to wait:
//
//   - waitFor blocks in epoll_pwait2 on the inner set for a bounded time,
//     holding the OS thread (DirectWait: a lone leader's replies are
//     there within microseconds, and the kernel wakes it directly);
//   - park waits in the Go runtime's netpoller like any goroutine blocked
//     on a socket. The inner set is not registered with the netpoller
//     itself: an outer epoll instance (non-blocking, an *os.File the
//     runtime watches) holds it, armed by park and disarmed by waitFor.
//     Armed while a leader waits directly, every reply would also wake
//     the runtime's netpoller thread (a wasted epoll_pwait and futex per
//     reply); disarmed and re-armed around every park, each park would
//     cost two more system calls. So the watch changes only when the
//     waiting changes kind: none for a lone caller's calls in a row, none
//     for the poller goroutine's parks in a row.
//
// epoll_wait on the inner set is otherwise only called with a zero
// timeout, to collect what is ready. Used by one token holder at a time
// (transport_token_linux.go, through transport_epoll_linux.go); add, mod
// and del may be called by anyone.
type epoller struct {
	fd     int      // the inner set
	outer  int      // holds fd (EPOLLIN, level-triggered) while armed; owned by file
	file   *os.File // over outer: pollable, outer is non-blocking
	raw    syscall.RawConn
	events []unix.EpollEvent
	look   []unix.EpollEvent  // ready's events: a caller without the token (enter), under the driver's look mutex
	harvFn func(uintptr) bool // p.harvest, bound once: park takes it without allocating
	ts     unix.Timespec      // waitFor's timeout (a field: nothing escapes per call)
	noPw2  bool               // epoll_pwait2 refused (old kernel, seccomp): waitFor uses epoll_wait
	armed  bool               // the outer set watches fd (park arms, waitFor disarms)

	// Set by harvest for park.
	nev int
	err error
}

// newEpoller creates an epoll instance with room for size events per wait.
// Its errors are New's (resourceErr).
func newEpoller(size int) (*epoller, error) {
	p, err := makeEpoller(size)
	if err != nil {
		return nil, resourceErr(err)
	}
	return p, nil
}

func makeEpoller(size int) (*epoller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	outer, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("epoll_create1(outer)", err)
	}
	fail := func(err error) (*epoller, error) {
		_ = unix.Close(outer)
		_ = unix.Close(fd)
		return nil, err
	}
	// Added disarmed (no events); park arms it.
	ev := unix.EpollEvent{Fd: int32(fd)}
	if err := unix.EpollCtl(outer, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fail(os.NewSyscallError("epoll_ctl(ADD inner to outer)", err))
	}
	if err := unix.SetNonblock(outer, true); err != nil {
		return fail(os.NewSyscallError("fcntl(O_NONBLOCK) on epoll", err))
	}
	file := os.NewFile(uintptr(outer), "redmux-epoll")
	raw, err := file.SyscallConn()
	if err != nil {
		_ = file.Close()
		_ = unix.Close(fd)
		return nil, err
	}
	p := &epoller{fd: fd, outer: outer, file: file, raw: raw, events: make([]unix.EpollEvent, size), look: make([]unix.EpollEvent, size)}
	p.harvFn = p.harvest
	return p, nil
}

// add registers fd with events, tagged tag in the events it reports.
func (p *epoller) add(fd int, tag int32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: tag}
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(ADD)", err)
	}
	return nil
}

// mod changes the events watched on fd.
func (p *epoller) mod(fd int, tag int32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: tag}
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_MOD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(MOD)", err)
	}
	return nil
}

// del stops watching fd. It cannot usefully fail: the descriptor is being
// closed, which removes it from the set anyway.
func (p *epoller) del(fd int) {
	_ = unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil)
}

// poke collects the events ready now into p.events, without waiting.
func (p *epoller) poke() (int, error) {
	for {
		n, err := unix.EpollWait(p.fd, p.events, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("epoll_wait", err)
		}
		return n, nil
	}
}

// ready collects the events ready now into p.look, without waiting and
// without reading anything: for a goroutine that does not hold the token
// (epoll_wait from two threads on one level-triggered set reports the
// same readiness to both and takes nothing from the holder's).
func (p *epoller) ready() (int, error) {
	for {
		n, err := unix.EpollWait(p.fd, p.look, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("epoll_wait", err)
		}
		return n, nil
	}
}

// arrived is the epoll set's: every connection whose socket is readable
// (enter's look, transport_token_linux.go).
func (s *epollSet) arrived(note func(idx int)) error {
	n, err := s.ep.ready()
	if err != nil {
		return err
	}
	for _, e := range s.ep.look[:n] {
		if e.Fd != wakeTag && e.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			note(int(e.Fd))
		}
	}
	return nil
}

// marks: a connection's own read turns (pconn.readable), which read its
// socket.
func (s *epollSet) marks(cn *pconn) (uint32, uint32) {
	return cn.rd.begun.Load(), cn.rd.ended.Load()
}

// harvest is park's poll function: it collects ready events of the inner
// set without blocking; false asks the netpoller to park until the outer
// set is readable.
func (p *epoller) harvest(uintptr) bool {
	n, err := unix.EpollWait(p.fd, p.events, 0)
	switch {
	case err == unix.EINTR:
		return false
	case err != nil:
		p.err = os.NewSyscallError("epoll_wait", err)
		return true
	case n == 0:
		return false
	}
	p.nev = n
	return true
}

// park returns the ready events, parking in the netpoller until one
// arrives or deadline (mono ns) passes (then 0 events, nil error).
func (p *epoller) park(deadline int64) (int, error) {
	if !p.armed {
		if n, err := p.poke(); n > 0 || err != nil {
			return n, err // ready now: no need to arm
		}
		if err := p.watch(unix.EPOLLIN); err != nil {
			return 0, err
		}
	}
	p.nev, p.err = 0, nil
	if err := p.file.SetReadDeadline(monoBase.Add(time.Duration(deadline))); err != nil {
		return 0, err
	}
	if err := p.raw.Read(p.harvFn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	return p.nev, p.err
}

// watch sets the outer set's watch of the inner one: EPOLLIN (armed) or
// nothing (disarmed).
func (p *epoller) watch(events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(p.fd)}
	if err := unix.EpollCtl(p.outer, unix.EPOLL_CTL_MOD, p.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(MOD outer)", err)
	}
	p.armed = events != 0
	return nil
}

// disarm stops the outer set's watch, if armed: a wait that blocks in the
// kernel on something else (io_uring_enter) is about to begin, and the
// netpoller must not be woken by what it waits for.
func (p *epoller) disarm() error {
	if !p.armed {
		return nil
	}
	return p.watch(0)
}

// waitFor returns the ready events, blocking the thread in the kernel for
// at most d ns (then 0 events, nil error; also on EINTR). d <= 0 (a sweep
// already due) only collects what is ready: a negative timeout would be
// EINVAL, which the caller would take for a broken epoll.
func (p *epoller) waitFor(d int64) (int, error) {
	if d <= 0 {
		return p.poke()
	}
	if err := p.disarm(); err != nil {
		return 0, err
	}
	if !p.noPw2 {
		p.ts = unix.NsecToTimespec(d)
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.fd),
			uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)),
			uintptr(unsafe.Pointer(&p.ts)), 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			return 0, nil
		case unix.ENOSYS, unix.EPERM:
			p.noPw2 = true // before Linux 5.11, or a seccomp policy: epoll_wait's milliseconds
		default:
			return 0, os.NewSyscallError("epoll_pwait2", e)
		}
	}
	ms := int((d + int64(time.Millisecond) - 1) / int64(time.Millisecond))
	n, err := unix.EpollWait(p.fd, p.events, ms)
	switch {
	case err == unix.EINTR:
		return 0, nil
	case err != nil:
		return 0, os.NewSyscallError("epoll_wait", err)
	}
	return n, nil
}

// close closes both epoll descriptors.
func (p *epoller) close() {
	_ = p.file.Close()
	_ = unix.Close(p.fd)
}
