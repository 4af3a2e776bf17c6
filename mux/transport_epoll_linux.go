//go:build linux

package mux

import (
	"time"

	"golang.org/x/sys/unix"
)

// epollSet is the default readySet: the sockets and the close eventfd,
// level-triggered in one epoll instance (the epoller,
// poller_epoll_linux.go). A lone leader waits in epoll_pwait2 on it, for
// up to its direct budget (Config.DirectWait; by default DefaultDirectWait
// under TransportAuto, off under TransportEpoll); everyone else parks in
// the netpoller.
type epollSet struct {
	d  *tokenDriver
	ep *epoller
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
		if err = ep.add(d.efd, wakeTag, unix.EPOLLIN); err != nil {
			ep.close()
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

func (s *epollSet) poke() error { return s.handle(s.ep.poke()) }

func (s *epollSet) waitFor(ns int64, _ int) error { return s.handle(s.ep.waitFor(ns)) }

func (s *epollSet) park(deadline int64) error { return s.handle(s.ep.park(deadline)) }

func (s *epollSet) flush() {}

func (s *epollSet) close() { s.ep.close() }

// handle runs n ready events.
func (s *epollSet) handle(n int, err error) error {
	if err != nil {
		return err
	}
	c := s.d.c
	for _, e := range s.ep.events[:n] {
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
