//go:build linux

package mux

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/redmux/redmux/mux/internal/poll"
)

// epollSet is the default readySet: the sockets and the close eventfd,
// level-triggered in one epoll instance (poll.Epoll). A lone leader waits in
// epoll_pwait2 on it, for up to its direct budget (Config.DirectWait; by
// default DefaultDirectWait under TransportAuto, off under TransportEpoll);
// everyone else parks in the netpoller.
type epollSet struct {
	d  *tokenDriver
	ep *poll.Epoll
}

var _ readySet = (*epollSet)(nil)

// newEpollDriver returns the epoll transport's driver, whose lone leader
// waits in epoll_pwait2 for up to direct (0: never).
func newEpollDriver(c *Client, direct time.Duration) (*tokenDriver, error) {
	d, err := newTokenDriver(c, direct)
	if err != nil {
		return nil, err
	}
	ep, err := newEpoller(len(c.conns) + 1)
	if err == nil {
		if err = ep.Add(d.efd, wakeTag, unix.EPOLLIN); err != nil {
			ep.Close()
		}
	}
	if err != nil {
		_ = unix.Close(d.efd)
		return nil, err
	}
	d.set = &epollSet{d: d, ep: ep}
	d.run()
	return d, nil
}

// newEpoller creates an epoll instance with room for size events per
// wait. Its errors are New's (resourceErr).
func newEpoller(size int) (*poll.Epoll, error) {
	p, err := poll.NewEpoll(size)
	if err != nil {
		return nil, resourceErr(err)
	}
	return p, nil
}

// monoTime is the time of mono ns t (a park's deadline).
func monoTime(t int64) time.Time { return monoBase.Add(time.Duration(t)) }

func (s *epollSet) poke() error { return s.handle(s.ep.Poke()) }

func (s *epollSet) waitFor(ns int64, _ int) error { return s.handle(s.ep.WaitFor(ns)) }

func (s *epollSet) park(deadline int64) error { return s.handle(s.ep.Park(monoTime(deadline))) }

func (s *epollSet) flush() {}

func (s *epollSet) close() { s.ep.Close() }

// handle runs the ready events.
func (s *epollSet) handle(evs []unix.EpollEvent, err error) error {
	if err != nil {
		return err
	}
	c := s.d.c
	if len(evs) == 0 {
		return nil
	}
	s.d.delivering.Store(true) // callers woken below hand their writes to us (handOff)
	for _, e := range evs {
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
	s.d.endDelivery()
	return nil
}

func (s *epollSet) dial(node, shard int) (link, error) {
	d := s.d
	fd, rest, err := d.c.dialRaw(node, shard, d.efd)
	if err != nil {
		return nil, err
	}
	return &rawLink{d: d, ep: s.ep, fd: fd, pre: rest}, nil
}

// arrived is the epoll set's: every connection whose socket is readable
// (enter's look, driver_token_enter_linux.go).
func (s *epollSet) arrived(note func(idx int)) error {
	evs, err := s.ep.Ready()
	if err != nil {
		return err
	}
	for _, e := range evs {
		if e.Fd != wakeTag && e.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			note(int(e.Fd))
		}
	}
	return nil
}

// marks: a connection's own read turns (pconn.readable), which read its
// socket.
func (s *epollSet) marks(cn *pconn) (begun, ended uint32) {
	return marksOf(&cn.rd.begun, &cn.rd.ended)
}
