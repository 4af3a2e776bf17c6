//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redmux/redmux/mux/internal/poll"
)

// uringSet is the io_uring readySet (Config.Transport = TransportIOURing):
// links queue their sends as submission entries, and the token holder
// hands them to the kernel in the same system call that waits for the
// replies. A lone caller's call is then one io_uring_enter: it submits the
// N sends (MSG_DONTWAIT: each completes during the submission, or says
// the socket is full) and sleeps until as many replies are in as the call
// needs (call.need), or its direct budget ends. Everyone else parks in the
// netpoller on the ring's descriptor (readable while completions wait),
// through a poll.Epoll, as the epoll set does. Receives: uringLink.postRecv;
// sends: uringLink.write; closing a descriptor the kernel still names:
// uringLink.close.
type uringSet struct {
	d  *tokenDriver
	r  *poll.Ring
	ep *poll.Epoll // the ring's descriptor and the close eventfd: park's wait

	mu    sync.Mutex
	links []*uringLink // by id: a link stays until its last completion is read
	free  []uint32

	reapFn func(uint64, int32, uint32) // s.complete, bound once

	// Read marks (marks): reaps begun and finished. A reap handles every
	// completion in the ring when it begins.
	reapBegun, reapEnded atomic.Uint32
}

var _ readySet = (*uringSet)(nil)

// The operations, in the low byte of an entry's user data (the link id
// above it).
const (
	uopRecv = 1 + iota
	uopSend
	uopPollOut // the socket was full: POLLOUT
	uopNop     // wantWrite found room: resume the engine's writes
)

const (
	// Each connection's receive buffers (its own group: a connection that
	// streams without end exhausts only its own). One receive is armed at
	// a time and its buffer goes back once parsed: two are enough.
	uringRecvBufs = 2
	uringRecvBuf  = 16 << 10
	// Each connection's two send buffers (one in flight, another
	// collecting) grow to the bytes written, from uringSendMin, up to
	// uringSendBuf each. Up to uringSendKeep they stay (steady state
	// allocates nothing); a larger one is dropped when the link goes idle
	// (its last send answered, nothing collected), so a connection keeps
	// at most 2 x 64 KiB after a large batch
	// (allocated whole at the dial they were 128 KiB of heap per
	// connection: 3,600 connections, 484.5 MB against epoll's 10.7 MB,
	// where a lock workload writes a few hundred bytes at a time).
	// uringSendBuf is large because each full buffer costs a round trip
	// through the token holder (the send's completion, then the writer
	// refills): at 64 KiB a 6 MB batch per node took 1.8x epoll's time
	// (TestRealCore/LargeBatch, 0.17-0.20 s against 0.09-0.13 s), at
	// 1 MiB the same as epoll (0.09-0.13 s).
	uringSendBuf  = 1 << 20
	uringSendKeep = 64 << 10
	uringSendMin  = 1 << 10
	// uringDirect is the direct budget when Config.DirectWait is unset:
	// waiting in io_uring_enter is what this transport is for (the wait
	// that submits).
	uringDirect = DefaultDirectWait
)

// uringSetup sets up a ring (a test replaces it to see the fallback).
var uringSetup = poll.NewRing

// uringEnters returns how many io_uring_enter calls were made (tests and
// benchmarks).
func uringEnters() int64 { return poll.Enters() }

// uringRefused returns why this machine refuses the io_uring transport
// (the ring or its provided buffers cannot be set up), or nil.
func uringRefused() error {
	r, err := uringSetup(8)
	if err != nil {
		return err
	}
	defer r.Close()
	return poll.ProbeBufRing(r, uringRecvBuf)
}

// newURingDriver returns the io_uring transport's driver, or an error
// when the kernel or a policy refuses io_uring (New then uses epoll).
func newURingDriver(c *Client) (*tokenDriver, error) {
	direct := c.cfg.DirectWait
	if direct == 0 && !c.cfg.directOff {
		direct = uringDirect
	}
	d, err := newTokenDriver(c, direct)
	if err != nil {
		return nil, err
	}
	r, err := uringSetup(uint32(8*len(c.conns) + 16))
	if err != nil {
		_ = unix.Close(d.efd)
		return nil, err
	}
	if err := poll.ProbeBufRing(r, uringRecvBuf); err != nil {
		r.Close()
		_ = unix.Close(d.efd)
		return nil, err
	}
	ep, err := newEpoller(2)
	if err == nil {
		err = ep.Add(r.Fd(), 0, unix.EPOLLIN)
		if err == nil {
			err = ep.Add(d.efd, wakeTag, unix.EPOLLIN)
		}
		if err != nil {
			ep.Close()
		}
	}
	if err != nil {
		r.Close()
		_ = unix.Close(d.efd)
		return nil, err
	}
	s := &uringSet{d: d, r: r, ep: ep}
	s.reapFn = s.complete
	d.set = s
	d.run()
	return d, nil
}

func (s *uringSet) dial(node, shard int) (link, error) {
	d := s.d
	fd, rest, err := d.c.dialRaw(node, shard, d.efd)
	if err != nil {
		return nil, err
	}
	l := &uringLink{s: s, fd: fd, pre: rest}
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		l.id = s.free[n-1]
		s.free = s.free[:n-1]
		s.links[l.id] = l
	} else {
		l.id = uint32(len(s.links))
		s.links = append(s.links, l)
	}
	s.mu.Unlock()
	if l.id >= poll.ProbeGroup { // a buffer group id is 16 bits (poll.ProbeGroup: the probe's)
		err = errors.New("io_uring: too many connections")
	} else {
		l.bufs, err = poll.NewBufRing(s.r, uint16(l.id), uringRecvBufs, uringRecvBuf)
	}
	if err != nil {
		_ = unix.Close(fd)
		s.retire(l)
		return nil, err
	}
	return l, nil
}

// retire frees l's id and buffers once its last completion was read.
func (s *uringSet) retire(l *uringLink) {
	if l.bufs != nil {
		l.bufs.Unregister(s.r)
		l.bufs.Unmap()
		l.bufs = nil
	}
	s.mu.Lock()
	s.links[l.id] = nil
	s.free = append(s.free, l.id)
	s.mu.Unlock()
}

// poke reads the completions there are: no system call (what is queued
// goes with the next wait, which is the point).
func (s *uringSet) poke() error {
	s.reap()
	return nil
}

// reap handles the completions in the ring (token holder), between read
// marks.
func (s *uringSet) reap() int {
	s.reapBegun.Add(1)
	n := s.r.Reap(s.reapFn)
	s.reapEnded.Add(1)
	return n
}

// marks: the ring's reaps (a connection's arrivals are read when their
// completions are reaped), the same for every connection.
func (s *uringSet) marks(*pconn) (begun, ended uint32) {
	return marksOf(&s.reapBegun, &s.reapEnded)
}

// arrived: every connection with a receive's completion with data waiting
// in the ring, not reaped yet (enter's look, driver_token_enter_linux.go).
// The ring's entries are read without taking them (Ring.Peek); one the
// holder reaps meanwhile may be read torn, which at worst notes a
// connection for nothing (the look then waits for a reap that is under
// way anyway).
func (s *uringSet) arrived(note func(idx int)) error {
	s.r.Peek(func(ud uint64, res int32) {
		if uint8(ud) != uopRecv || res <= 0 {
			return
		}
		id := uint32(ud >> 8)
		var l *uringLink
		s.mu.Lock()
		if int(id) < len(s.links) {
			l = s.links[id]
		}
		s.mu.Unlock()
		if l == nil {
			return
		}
		l.mu.Lock()
		cn := l.cn
		l.mu.Unlock()
		if cn != nil {
			note(cn.idx)
		}
	})
	return nil
}

func (s *uringSet) submit() error {
	if !s.r.Queued() {
		return nil
	}
	return s.r.Submit(false, 0, 0)
}

func (s *uringSet) waitFor(ns int64, need int) error {
	if s.reap() > 0 {
		return s.submit() // something came: handle it before waiting
	}
	if err := s.ep.Disarm(); err != nil {
		return err
	}
	// At most a leader's slice at a time: Close, which the wait does not
	// see (the close eventfd is in the epoll set, not in the ring), is
	// noticed between slices.
	if err := s.r.Submit(true, need, min(ns, leaderSlice)); err != nil {
		return err
	}
	s.reap()
	return nil
}

// park parks only when nothing came: handling a completion may queue
// entries (a send's next part, a receive re-armed) that the next round
// must submit before waiting.
func (s *uringSet) park(deadline int64) error {
	if err := s.submit(); err != nil {
		return err
	}
	if s.reap() > 0 {
		return nil
	}
	evs, err := s.ep.Park(monoTime(deadline))
	if err != nil {
		return err
	}
	if len(evs) > 0 {
		s.reap()
	}
	return nil
}

func (s *uringSet) flush() {
	if err := s.submit(); err != nil {
		s.d.wake() // the token holder's next submit reports it
	}
}

// close waits (bounded) for the kernel to answer what closed links still
// have in flight, then releases the ring.
func (s *uringSet) close() {
	end := time.Now().Add(time.Second)
	for s.d.busy.Load() > 0 && time.Now().Before(end) {
		_ = s.r.Submit(true, 1, int64(10*time.Millisecond))
		s.reap()
	}
	s.ep.Close()
	s.r.Close()
	// Links not retired by now (a kernel that never answered, or a link a
	// writer still held when Close failed the connections) keep their
	// buffers for good: the kernel tears the ring down asynchronously, and
	// memory it may still write to is never unmapped or collected.
	s.mu.Lock()
	for _, l := range s.links {
		if l != nil {
			uringOrphans.Lock()
			uringOrphans.links = append(uringOrphans.links, l)
			uringOrphans.Unlock()
		}
	}
	s.mu.Unlock()
}

var uringOrphans struct {
	sync.Mutex
	links []*uringLink
}

// complete handles one completion (token holder).
func (s *uringSet) complete(ud uint64, res int32, flags uint32) {
	s.mu.Lock()
	id := uint32(ud >> 8)
	var l *uringLink
	if int(id) < len(s.links) {
		l = s.links[id]
	}
	s.mu.Unlock()
	if l == nil {
		return
	}
	switch ud & 0xff {
	case uopRecv:
		l.recvDone(res, flags)
	case uopSend:
		l.sendDone(res)
	case uopPollOut:
		l.pollOutDone(res)
	case uopNop:
		l.nopDone()
	}
}
