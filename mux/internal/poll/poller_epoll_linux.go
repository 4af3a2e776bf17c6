//go:build linux

package poll

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Epoll is one epoll instance (the inner set: mux's sockets and its
// close eventfd, level-triggered) and every system call made on it, each
// with its own label in errors (as gnet's poller names one method per
// change). Two ways to wait:
//
//   - WaitFor blocks in epoll_pwait2 on the inner set for a bounded time,
//     holding the OS thread (DirectWait: a lone leader's replies are
//     there within microseconds, and the kernel wakes it directly);
//   - Park waits in the Go runtime's netpoller like any goroutine blocked
//     on a socket. The inner set is not registered with the netpoller
//     itself: an outer epoll instance (non-blocking, an *os.File the
//     runtime watches) holds it, armed by Park and disarmed by WaitFor.
//     Armed while a leader waits directly, every reply would also wake
//     the runtime's netpoller thread (a wasted epoll_pwait and futex per
//     reply); disarmed and re-armed around every park, each park would
//     cost two more system calls. So the watch changes only when the
//     waiting changes kind: none for a lone caller's calls in a row, none
//     for the poller goroutine's parks in a row.
//
// epoll_wait on the inner set is otherwise only called with a zero
// timeout, to collect what is ready. The waits (Poke, WaitFor, Park) are
// for one goroutine at a time (mux's reader-token holder); Ready is for
// another goroutine that looks without reading; Add, Mod and Del may be
// called by anyone. The events a wait returns are valid until that
// goroutine's next wait; Ready's, until the next Ready.
type Epoll struct {
	fd     int      // the inner set
	outer  int      // holds fd (EPOLLIN, level-triggered) while armed; owned by file
	file   *os.File // over outer: pollable, outer is non-blocking
	raw    syscall.RawConn
	events []unix.EpollEvent
	look   []unix.EpollEvent  // Ready's events: a caller without the token (mux's enter), under the driver's look mutex
	harvFn func(uintptr) bool // p.harvest, bound once: Park takes it without allocating
	ts     unix.Timespec      // WaitFor's timeout (a field: nothing escapes per call)
	noPw2  bool               // epoll_pwait2 refused (old kernel, seccomp): WaitFor uses epoll_wait
	armed  bool               // the outer set watches fd (Park arms, WaitFor and Disarm disarm)

	// Set by harvest for Park.
	nev int
	err error
}

// NewEpoll creates an epoll instance with room for size events per wait.
func NewEpoll(size int) (*Epoll, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	outer, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("epoll_create1(outer)", err)
	}
	fail := func(err error) (*Epoll, error) {
		_ = unix.Close(outer)
		_ = unix.Close(fd)
		return nil, err
	}
	// Added disarmed (no events); Park arms it.
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
	p := &Epoll{fd: fd, outer: outer, file: file, raw: raw, events: make([]unix.EpollEvent, size), look: make([]unix.EpollEvent, size)}
	p.harvFn = p.harvest
	return p, nil
}

// Add registers fd with events, tagged tag in the events it reports.
func (p *Epoll) Add(fd int, tag int32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: tag}
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(ADD)", err)
	}
	return nil
}

// Mod changes the events watched on fd.
func (p *Epoll) Mod(fd int, tag int32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: tag}
	if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_MOD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(MOD)", err)
	}
	return nil
}

// Del stops watching fd. It cannot usefully fail: the descriptor is being
// closed, which removes it from the set anyway.
func (p *Epoll) Del(fd int) {
	_ = unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil)
}

// Poke returns the events ready now, without waiting.
func (p *Epoll) Poke() ([]unix.EpollEvent, error) {
	for {
		n, err := EpollNow(p.fd, p.events)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("epoll_wait", err)
		}
		return p.events[:n], nil
	}
}

// Ready returns the events ready now, without waiting and without reading
// anything, in a slice of its own: for a goroutine that does not hold
// the token (epoll_wait from two threads on one level-triggered set
// reports the same readiness to both and takes nothing from the
// holder's).
func (p *Epoll) Ready() ([]unix.EpollEvent, error) {
	for {
		n, err := EpollNow(p.fd, p.look)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("epoll_wait", err)
		}
		return p.look[:n], nil
	}
}

// harvest is Park's poll function: it collects ready events of the inner
// set without blocking; false asks the netpoller to park until the outer
// set is readable.
func (p *Epoll) harvest(uintptr) bool {
	n, err := EpollNow(p.fd, p.events)
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

// Park returns the ready events, parking in the netpoller until one
// arrives or deadline passes (then no events, nil error).
func (p *Epoll) Park(deadline time.Time) ([]unix.EpollEvent, error) {
	if !p.armed {
		if evs, err := p.Poke(); len(evs) > 0 || err != nil {
			return evs, err // ready now: no need to arm
		}
		if err := p.watch(unix.EPOLLIN); err != nil {
			return nil, err
		}
	}
	p.nev, p.err = 0, nil
	if err := p.file.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	if err := p.raw.Read(p.harvFn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, nil
		}
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.events[:p.nev], nil
}

// watch sets the outer set's watch of the inner one: EPOLLIN (armed) or
// nothing (disarmed).
func (p *Epoll) watch(events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(p.fd)}
	if err := unix.EpollCtl(p.outer, unix.EPOLL_CTL_MOD, p.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl(MOD outer)", err)
	}
	p.armed = events != 0
	return nil
}

// Disarm stops the outer set's watch, if armed: a wait that blocks in the
// kernel on something else (io_uring_enter) is about to begin, and the
// netpoller must not be woken by what it waits for.
func (p *Epoll) Disarm() error {
	if !p.armed {
		return nil
	}
	return p.watch(0)
}

// WaitFor returns the ready events, blocking the thread in the kernel for
// at most d ns (then no events, nil error; also on EINTR). d <= 0 (a sweep
// already due) only collects what is ready: a negative timeout would be
// EINVAL, which the caller would take for a broken epoll.
func (p *Epoll) WaitFor(d int64) ([]unix.EpollEvent, error) {
	if d <= 0 {
		return p.Poke()
	}
	if err := p.Disarm(); err != nil {
		return nil, err
	}
	if !p.noPw2 {
		p.ts = unix.NsecToTimespec(d)
		n, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.fd),
			uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)),
			uintptr(unsafe.Pointer(&p.ts)), 0, 0)
		switch e {
		case 0:
			return p.events[:n], nil
		case unix.EINTR:
			return nil, nil
		case unix.ENOSYS, unix.EPERM:
			p.noPw2 = true // before Linux 5.11, or a seccomp policy: epoll_wait's milliseconds
		default:
			return nil, os.NewSyscallError("epoll_pwait2", e)
		}
	}
	ms := int((d + int64(time.Millisecond) - 1) / int64(time.Millisecond))
	n, err := unix.EpollWait(p.fd, p.events, ms)
	switch {
	case err == unix.EINTR:
		return nil, nil
	case err != nil:
		return nil, os.NewSyscallError("epoll_wait", err)
	}
	return p.events[:n], nil
}

// Close closes both epoll descriptors.
func (p *Epoll) Close() {
	_ = p.file.Close()
	_ = unix.Close(p.fd)
}
