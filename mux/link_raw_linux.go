//go:build linux

package mux

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/redmux/redmux/mux/internal/poll"
)

var _ link = (*rawLink)(nil)

const (
	evIn  = unix.EPOLLIN | unix.EPOLLRDHUP
	evOut = unix.EPOLLOUT
)

// rawLink is a raw non-blocking socket watched by the driver's epoll.
type rawLink struct {
	d     *tokenDriver
	ep    *poll.Epoll
	fd    int
	tag   int32
	outOn bool
	gone  atomic.Bool
	pre   []byte // read past the set-up replies (push frames): read first
}

func (l *rawLink) write(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		n, err := poll.Write(l.fd, p[w:])
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
		n, err := poll.Read(l.fd, p)
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
	return l.ep.Add(l.fd, l.tag, evIn)
}

func (l *rawLink) wantWrite(on bool) error {
	if on == l.outOn {
		return nil
	}
	events := uint32(evIn)
	if on {
		events |= evOut
	}
	if err := l.ep.Mod(l.fd, l.tag, events); err != nil {
		return err
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
	l.ep.Del(l.fd)
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
