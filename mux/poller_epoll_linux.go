//go:build linux

package mux

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// epoller is one epoll instance and every system call made on it, each
// with its own label in errors (as gnet's poller names one method per
// change). The descriptor is non-blocking and registered with the Go
// runtime's netpoller (an *os.File over it): park waits there like any
// goroutine blocked on a socket, and epoll_wait itself is only called with
// a zero timeout, to collect what is ready. Used by one token holder at a
// time (transport_epoll_linux.go); add, mod and del may be called by
// anyone.
type epoller struct {
	fd     int
	file   *os.File // owns fd
	raw    syscall.RawConn
	events []unix.EpollEvent
	harvFn func(uintptr) bool // p.harvest, bound once: park takes it without allocating

	// Set by harvest for park.
	nev int
	err error
}

// newEpoller creates an epoll instance with room for size events per wait.
func newEpoller(size int) (*epoller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, os.NewSyscallError("fcntl(O_NONBLOCK) on epoll", err)
	}
	file := os.NewFile(uintptr(fd), "redmux-epoll") // pollable: fd is non-blocking
	raw, err := file.SyscallConn()
	if err != nil {
		_ = file.Close()
		return nil, err
	}
	p := &epoller{fd: fd, file: file, raw: raw, events: make([]unix.EpollEvent, size)}
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

// harvest is park's poll function: it collects ready events without
// blocking; false asks the netpoller to park until fd is readable.
func (p *epoller) harvest(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), p.events, 0)
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

// close closes the epoll descriptor.
func (p *epoller) close() { _ = p.file.Close() }
