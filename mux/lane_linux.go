//go:build linux && !redmux_portable

package mux

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sock is a raw non-blocking socket; fd < 0 when down.
type sock struct{ fd int }

func (s *sock) valid() bool { return s.fd >= 0 }

// handle is a freshly dialled and set-up connection, with any bytes read
// past the set-up replies.
type handle struct {
	fd   int
	rest []byte
}

func (h *handle) close() { _ = unix.Close(h.fd) }

// clientPlat holds the eventfd that Close makes readable to wake every
// lane's epoll_wait and abort dials in progress.
type clientPlat struct{ efd int }

func (p *clientPlat) open() error {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	p.efd = fd
	return nil
}

func (p *clientPlat) signal() {
	var one = [8]byte{1}
	_, _ = unix.Write(p.efd, one[:])
}

func (p *clientPlat) close() { _ = unix.Close(p.efd) }

// closeTag marks the close eventfd's epoll events.
const closeTag = -1

const (
	evIn  = unix.EPOLLIN | unix.EPOLLRDHUP
	evOut = unix.EPOLLOUT
)

// lanePlat is a lane's epoll instance.
//
// A caller waiting for replies does not block its OS thread in epoll_wait:
// the lane's epoll descriptor is itself pollable, so it is registered with
// the Go runtime's netpoller (as a non-blocking *os.File) and the caller
// parks there like any goroutine blocked on a socket. A thread blocked in a
// raw syscall keeps its P until sysmon retakes it, which under load can
// take up to 10 ms and showed up as 10-40 ms tail latencies with many
// concurrent callers on 2 cores. epoll_wait itself is only ever called with
// a zero timeout, to harvest ready events.
type lanePlat struct {
	epfd   int
	epFile *os.File        // owns epfd; registered with the netpoller
	epRaw  syscall.RawConn // epFile's raw access, for parking in Read
	pollFn func(uintptr) bool
	nev    int   // events harvested by pollFn
	perr   error // epoll_wait error seen by pollFn
	events []unix.EpollEvent
	outOn  []bool // EPOLLOUT interest registered, per node
}

const initialReadBuf = 16 << 10

func newLane(c *Client) (*lane, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: closeTag}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, c.plat.efd, &ev); err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	epFile := os.NewFile(uintptr(epfd), "redmux-epoll") // pollable: epfd is non-blocking
	epRaw, err := epFile.SyscallConn()
	if err != nil {
		_ = epFile.Close()
		return nil, err
	}
	l := &lane{
		c:     c,
		conns: make([]conn, c.n),
		run:   make([]nodeRun, c.n),
		lanePlat: lanePlat{
			epfd:   epfd,
			epFile: epFile,
			epRaw:  epRaw,
			events: make([]unix.EpollEvent, c.n+1),
			outOn:  make([]bool, c.n),
		},
	}
	for i := range l.conns {
		l.conns[i].fd = -1
	}
	l.pollFn = l.harvest // bound once: Read takes it without allocating
	return l, nil
}

// harvest collects ready events without blocking; false asks the netpoller
// to park the caller until the epoll descriptor is readable.
func (l *lane) harvest(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), l.events, 0)
	switch {
	case err == unix.EINTR:
		return false
	case err != nil:
		l.perr = err
		return true
	case n == 0:
		return false
	}
	l.nev = n
	return true
}

// wait returns the ready events, parking the caller in the netpoller until
// one arrives or the deadline (mono ns) passes (then 0 events, nil error).
func (l *lane) wait(deadline int64) (int, error) {
	l.nev, l.perr = 0, nil
	// Read calls harvest first and parks only if nothing is ready.
	if err := l.epFile.SetReadDeadline(monoBase.Add(time.Duration(deadline))); err != nil {
		return 0, err
	}
	if err := l.epRaw.Read(l.pollFn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, nil
		}
		return 0, err
	}
	return l.nev, l.perr
}

// attach installs a dialled connection as node i's.
func (l *lane) attach(i int, h *handle) {
	cn := &l.conns[i]
	ev := unix.EpollEvent{Events: evIn, Fd: int32(i)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, h.fd, &ev); err != nil {
		h.close()
		cn.need.Store(true)
		l.c.wakeSupervisor(i)
		return
	}
	cn.fd = h.fd
	l.outOn[i] = false
	cn.resetState()
	if cn.rbuf == nil {
		cn.rbuf = make([]byte, initialReadBuf)
	}
	if len(h.rest) > 0 {
		if len(h.rest) > len(cn.rbuf) {
			cn.rbuf = make([]byte, len(h.rest)*2)
		}
		cn.w = copy(cn.rbuf, h.rest)
	}
}

// closeConn closes node i's socket (removing it from epoll first).
func (l *lane) closeConn(i int) {
	cn := &l.conns[i]
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, cn.fd, nil)
	_ = unix.Close(cn.fd)
	cn.fd = -1
	l.outOn[i] = false
}

// shutdown closes every socket of the lane, any connection waiting to be
// installed, and the epoll instance.
func (l *lane) shutdown() {
	for i := range l.conns {
		cn := &l.conns[i]
		if cn.valid() {
			l.closeConn(i)
		}
		if h := cn.ready.Swap(nil); h != nil {
			h.close()
		}
	}
	_ = l.epFile.Close() // closes epfd
	l.epfd = -1
}

// do runs one batch: write every node's bytes straight to its socket, then
// wait on epoll for replies (and for write space when a write was short).
func (l *lane) do(b *Batch, start, deadline int64) (Outcome, error) {
	l.begin(b)
	for i := range l.run {
		st := &l.run[i]
		if !st.active || st.done {
			continue
		}
		if !l.prepare(i, start) {
			continue
		}
		st.wdata = b.cmds[i]
		l.flush(i)
	}
	closed := false
	var ctxErr error
	for l.open > 0 && !l.decided {
		if l.c.closed.Load() {
			closed = true
			break
		}
		if err := l.ctx.Err(); err != nil {
			ctxErr = err
			break
		}
		if deadline-mono() <= 0 {
			break
		}
		n, err := l.wait(deadline)
		if err != nil {
			l.failOpen(os.NewSyscallError("epoll_wait", err))
			break
		}
		for _, e := range l.events[:n] {
			i := int(e.Fd)
			if i == closeTag {
				closed = true
				continue
			}
			if !l.conns[i].valid() {
				continue
			}
			if e.Events&unix.EPOLLOUT != 0 {
				l.flush(i)
			}
			if e.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && l.conns[i].valid() {
				l.readConn(i)
			}
		}
		if closed {
			break
		}
	}
	out := l.finish(start)
	if closed {
		return out, ErrClosed
	}
	return out, ctxErr
}

// failOpen breaks every open node's connection (epoll itself failed).
func (l *lane) failOpen(err error) {
	for i := range l.run {
		st := &l.run[i]
		if st.active && !st.done {
			l.broken(i, err)
		}
	}
}

// shortWrites counts writes that hit EAGAIN (for tests).
var shortWrites atomic.Int64

// flush writes node i's pending bytes until done or EAGAIN, and keeps
// EPOLLOUT interest exactly while bytes remain.
func (l *lane) flush(i int) {
	cn := &l.conns[i]
	st := &l.run[i]
	for len(st.wdata) > 0 {
		n, err := unix.Write(cn.fd, st.wdata)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			shortWrites.Add(1)
			break
		}
		if err != nil {
			l.broken(i, os.NewSyscallError("write", err))
			return
		}
		st.wdata = st.wdata[n:]
		st.written += n
	}
	want := len(st.wdata) > 0
	if want != l.outOn[i] {
		ev := unix.EpollEvent{Events: evIn, Fd: int32(i)}
		if want {
			ev.Events |= evOut
		}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, cn.fd, &ev); err != nil {
			l.broken(i, os.NewSyscallError("epoll_ctl", err))
			return
		}
		l.outOn[i] = want
	}
}

// queueWrite appends extra to node i's pending bytes (in the connection's
// own buffer) and tries to write.
func (l *lane) queueWrite(i int, extra []byte) {
	cn := &l.conns[i]
	st := &l.run[i]
	cn.wout = append(append(cn.wout[:0], st.wdata...), extra...)
	st.wdata = cn.wout
	l.flush(i)
}

// unqueue drops node i's unwritten bytes (nothing of them was sent).
func (l *lane) unqueue(i int) {
	st := &l.run[i]
	st.wdata = nil
	if l.conns[i].valid() && l.outOn[i] {
		ev := unix.EpollEvent{Events: evIn, Fd: int32(i)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, l.conns[i].fd, &ev); err == nil {
			l.outOn[i] = false
		}
	}
}

// readConn reads what node i's socket has (until EAGAIN or a short read)
// and parses it.
func (l *lane) readConn(i int) {
	cn := &l.conns[i]
	for {
		if cn.w == len(cn.rbuf) {
			if cn.r > 0 {
				cn.w = copy(cn.rbuf, cn.rbuf[cn.r:cn.w])
				cn.r = 0
			} else {
				nb := make([]byte, 2*len(cn.rbuf))
				copy(nb, cn.rbuf[:cn.w])
				cn.rbuf = nb
			}
		}
		space := len(cn.rbuf) - cn.w
		n, err := unix.Read(cn.fd, cn.rbuf[cn.w:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return
		}
		if err != nil {
			l.broken(i, os.NewSyscallError("read", err))
			return
		}
		if n == 0 {
			l.broken(i, io.EOF)
			return
		}
		cn.w += n
		l.ingest(i)
		if !cn.valid() || n < space {
			return
		}
	}
}

// drain reads and skips what has arrived on node i's connection without
// waiting.
func (l *lane) drain(i int) { l.readConn(i) }
