//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"os"
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
// through a poll.Epoll, as the epoll set does.
//
// Each link has one receive armed, into one of its own provided buffers
// (poll.BufRing: a group per link, so a node that streams without end
// exhausts only its own), which the reader gives back, with no system
// call, once it has parsed it. The receive is re-armed after each
// arrival and submitted with the next submission: the leader's wait, or
// the flush when the leader gives the token back, so a connection is
// read while idle too (a stray reply is seen before the next call's
// commands go out, as with epoll). Not multishot receives: the kernel
// completes a receive on the thread that submitted it (task work), and a
// multishot receive armed once is answered by a thread other than the
// waiting leader's, woken for each arrival (3 more futex calls per
// acquire+release pair, and slower, measured side by side); a receive
// submitted in the leader's own wait is completed by the leader's thread
// inside that wait. Sends: at most one in flight per link;
// what callers write meanwhile collects in a second buffer and goes when
// the first completes. A link's descriptor is closed only once the kernel
// has answered every entry that names it, so a number the kernel still
// holds is never reused under it; the link and its buffers stay in the
// set's table until then.
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
	// collecting) grow to the bytes written, from uringSendMin, and stay
	// (steady state allocates nothing), up to uringSendBuf each: allocated
	// whole at the dial they were 128 KiB of heap per connection (3,600
	// connections: 484.5 MB, against epoll's 10.7 MB), where a lock
	// workload writes a few hundred bytes at a time.
	uringSendBuf = 64 << 10
	uringSendMin = 1 << 10
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
func (s *uringSet) marks(*pconn) (uint32, uint32) {
	return s.reapBegun.Load(), s.reapEnded.Load()
}

// arrived: every connection with a receive's completion with data waiting
// in the ring, not reaped yet (enter's look, transport_token_linux.go).
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

// uringLink is one connection on the io_uring transport.
type uringLink struct {
	s    *uringSet
	id   uint32
	fd   int
	bufs *poll.BufRing // this connection's receive buffers (group id)
	cn   *pconn
	pre  []byte // read past the set-up replies (push frames): read first

	mu      sync.Mutex // the send side, ops, outOn, closed
	ops     int        // entries queued or in flight whose completion was not read
	sbuf    []byte     // in flight: sbuf[soff:]
	soff    int
	nbuf    []byte // written while sbuf is in flight
	sending bool
	sendErr error
	outOn   bool // the engine waits for room (wantWrite)
	closed  bool // close was called: fd closes after the last completion
	fdShut  bool

	// The reader side's (token holder).
	cur  []byte // the arrival being read: cur[roff:] is unread
	roff int
	full bool // cur filled its buffer: read on from the socket
	eof  bool
	rerr error
}

var _ link = (*uringLink)(nil)

var errLinkClosed = errors.New("connection closed")

func (l *uringLink) ud(op uint64) uint64 { return uint64(l.id)<<8 | op }

// queue adds entry e naming l (l.mu held); inline: e completes during
// its submission.
func (l *uringLink) queue(e poll.Entry, inline bool) error {
	if err := l.s.r.Queue(e, inline); err != nil {
		return err
	}
	l.ops++
	return nil
}

// postSend queues the send of sbuf[soff:] (l.mu held).
func (l *uringLink) postSend() error {
	l.sending = true
	return l.queue(poll.SendEntry(l.fd, l.sbuf[l.soff:], unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, l.ud(uopSend)), true)
}

func (l *uringLink) write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return 0, errLinkClosed
	case l.sendErr != nil:
		return 0, l.sendErr
	case len(p) == 0:
		return 0, nil
	}
	if !l.sending {
		n := min(len(p), uringSendBuf)
		if n > cap(l.sbuf) {
			// Not in flight: replaced, not copied.
			l.sbuf = make([]byte, 0, sendCap(n, cap(l.sbuf)))
		}
		l.sbuf = append(l.sbuf[:0], p[:n]...)
		l.soff = 0
		if err := l.postSend(); err != nil {
			l.sending = false
			return 0, os.NewSyscallError("io_uring send", err)
		}
		return n, nil
	}
	n := min(len(p), uringSendBuf-len(l.nbuf))
	if len(l.nbuf)+n > cap(l.nbuf) {
		nb := make([]byte, len(l.nbuf), sendCap(len(l.nbuf)+n, cap(l.nbuf)))
		copy(nb, l.nbuf)
		l.nbuf = nb
	}
	l.nbuf = append(l.nbuf, p[:n]...)
	return n, nil
}

// sendCap is the capacity a send buffer of capacity have grows to for
// need bytes: doubled, at least uringSendMin, at most uringSendBuf.
func sendCap(need, have int) int {
	return min(max(need, 2*have, uringSendMin), uringSendBuf)
}

// sendDone: the kernel answered a send (token holder).
func (l *uringLink) sendDone(res int32) {
	l.mu.Lock()
	l.ops--
	var fail error
	switch {
	case res == -int32(unix.EAGAIN) || (res >= 0 && l.soff+int(res) < len(l.sbuf)):
		// The socket is full: wait for room, then send the rest.
		if res > 0 {
			l.soff += int(res)
		}
		if err := l.queue(poll.PollEntry(l.fd, unix.POLLOUT, l.ud(uopPollOut)), false); err != nil {
			fail = err
		}
	case res < 0:
		fail = os.NewSyscallError("send", unix.Errno(-res))
	default:
		l.nextSend()
	}
	if fail != nil {
		l.sendErr, l.sending = fail, false
	}
	resume := l.outOn && (!l.sending || len(l.nbuf) < uringSendBuf)
	l.mu.Unlock()
	l.after(fail, resume)
}

// nextSend sends what collected in nbuf, if anything (l.mu held).
func (l *uringLink) nextSend() {
	l.sending = false
	if len(l.nbuf) == 0 || l.closed {
		return
	}
	l.sbuf, l.nbuf = l.nbuf, l.sbuf[:0]
	l.soff = 0
	if err := l.postSend(); err != nil {
		l.sendErr, l.sending = err, false
	}
}

func (l *uringLink) pollOutDone(res int32) {
	l.mu.Lock()
	l.ops--
	var fail error
	if res < 0 && res != -int32(unix.ECANCELED) {
		fail = os.NewSyscallError("poll", unix.Errno(-res))
		l.sendErr, l.sending = fail, false
	} else if !l.closed {
		if err := l.postSend(); err != nil {
			fail = err
			l.sendErr, l.sending = fail, false
		}
	}
	l.mu.Unlock()
	l.after(fail, false)
}

func (l *uringLink) nopDone() {
	l.mu.Lock()
	l.ops--
	resume := l.outOn
	l.mu.Unlock()
	l.after(nil, resume)
}

// after finishes a completion outside l.mu: a failed send breaks the
// connection, room resumes the engine's writes, and a closed link whose
// last completion this was closes its descriptor.
func (l *uringLink) after(fail error, resume bool) {
	l.mu.Lock()
	cn := l.cn
	l.mu.Unlock()
	if cn != nil && cn.current() == link(l) {
		if fail != nil {
			cn.abort(ErrConnBroken, fail)
		} else if resume {
			cn.writable()
		}
	}
	l.mu.Lock()
	last := l.closed && l.ops == 0 && l.fd >= 0
	fd := l.fd
	if last {
		l.fd = -1
	}
	l.mu.Unlock()
	if last {
		_ = unix.Close(fd)
		l.s.retire(l)
		l.s.d.busy.Add(-1)
	}
}

// postRecv arms the receive (at start, and after each arrival).
func (l *uringLink) postRecv() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	// Into one of the link's buffers (its group is its id), picked by the
	// kernel when the bytes arrive.
	if err := l.queue(poll.RecvEntry(l.fd, uint16(l.id), l.ud(uopRecv)), false); err != nil {
		l.rerr = os.NewSyscallError("io_uring recv", err)
	}
}

// recvDone: the receive answered (token holder): an arrival in a
// provided buffer, read now and given back, the end of the stream, or an
// error. It is armed again unless the stream ended or failed.
func (l *uringLink) recvDone(res int32, flags uint32) {
	// The receive was queued under mu: taking it orders what was written
	// before (cn, the buffers) before what this reads; a completion from
	// the kernel is no such edge for Go.
	l.mu.Lock()
	cn, bufs := l.cn, l.bufs
	l.mu.Unlock()
	live := func() bool { return cn != nil && cn.current() == link(l) }
	rearm := true
	id, hasBuf := poll.BufferID(flags)
	switch {
	case res > 0 && hasBuf:
		l.cur, l.roff = bufs.Buf(id, int(res)), 0
		l.full = int(res) == uringRecvBuf
		if live() {
			// readable reads until a read comes back short or its budget
			// is spent; what is left would get no completion of its own.
			for cn.readable(l) && (l.roff < len(l.cur) || len(l.pre) > 0) && live() {
			}
		}
		l.cur, l.roff, l.full = nil, 0, false
		bufs.Put(id)
	case res == 0:
		l.eof, rearm = true, false
	case res == -int32(unix.ENOBUFS) || res == -int32(unix.EINTR) || res == -int32(unix.EAGAIN) || res == -int32(unix.ECANCELED):
		// Not an answer from the socket (no buffer was free, or the entry
		// was cancelled or interrupted): armed again below.
	default:
		l.rerr, rearm = os.NewSyscallError("recv", unix.Errno(-res)), false
	}
	if (l.eof || l.rerr != nil) && res <= 0 && live() {
		cn.readable(l) // fails the connection: end of stream, or the error
	}
	// Counted done only now: a connection failed above was closed with
	// this entry still counted, so its descriptor and buffers stayed for
	// the lines above, and go in after.
	l.mu.Lock()
	l.ops--
	l.mu.Unlock()
	if rearm {
		l.postRecv()
		if l.rerr != nil && live() {
			// Not armed (the ring is full or closed): nothing would read
			// this connection again, so it fails now.
			cn.fail(ErrConnBroken, l.rerr)
		}
	}
	l.after(nil, false)
}

// read copies what the arrival being read holds (after what was read past
// the set-up): one read returns everything there is, because the engine's
// readable stops at a read shorter than its buffer (reader side).
func (l *uringLink) read(p []byte) (int, error) {
	n := 0
	if len(l.pre) > 0 {
		n = copy(p, l.pre)
		l.pre = l.pre[n:]
	}
	if l.roff < len(l.cur) && n < len(p) {
		k := copy(p[n:], l.cur[l.roff:])
		l.roff += k
		n += k
	}
	if n > 0 {
		return n, nil
	}
	if l.full && l.cur != nil {
		// The arrival filled its buffer: more is likely there. Read it
		// from the socket directly (no receive is armed while this one is
		// handled, so the order holds) up to the engine's read budget,
		// rather than one 16 KiB buffer per wait.
		for {
			k, err := unix.Read(l.fd, p)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				l.full = false
				return 0, errWouldBlock
			case err != nil:
				l.full = false
				return 0, os.NewSyscallError("read", err)
			case k == 0:
				l.full = false
				return 0, nil // end of stream
			}
			return k, nil
		}
	}
	switch {
	case l.rerr != nil:
		return 0, l.rerr
	case l.eof:
		return 0, nil
	}
	return 0, errWouldBlock
}

func (l *uringLink) nonBlocking() bool { return true }

func (l *uringLink) start(cn *pconn) error {
	l.mu.Lock()
	l.cn = cn // under mu: the token holder reads it after taking mu (recvDone, after)
	l.mu.Unlock()
	l.postRecv()
	if l.rerr != nil {
		return l.rerr
	}
	l.s.flush() // armed now, so a node that hangs up is seen
	return nil
}

// wantWrite: on, the engine waits for room to write the rest; if there
// is room already, a no-op entry's completion resumes it (the token holder
// calls writable, as for a completed send).
func (l *uringLink) wantWrite(on bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if on == l.outOn {
		return nil
	}
	l.outOn = on
	if !on {
		l.s.d.outArmed.Add(-1)
		return nil
	}
	l.s.d.outArmed.Add(1)
	if !l.sending || len(l.nbuf) < uringSendBuf {
		if err := l.queue(poll.NopEntry(l.fd, l.ud(uopNop)), false); err != nil {
			return err
		}
	}
	l.s.d.wake() // someone must hold the token to hear it
	return nil
}

func (l *uringLink) unregister() {
	l.mu.Lock()
	if l.outOn {
		l.outOn = false
		l.s.d.outArmed.Add(-1)
	}
	l.mu.Unlock()
}

// abort shuts the socket down: the receive in flight completes (end of
// stream) and the token holder fails the connection.
func (l *uringLink) abort() {
	l.mu.Lock()
	if !l.closed && !l.fdShut {
		l.fdShut = true
		_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
	}
	l.mu.Unlock()
	l.s.d.wake()
}

// close closes the descriptor now if nothing names it in the kernel, or
// shuts the socket down and leaves the close to the last completion.
func (l *uringLink) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.ops > 0 && l.s.r.Closed() {
		// The ring is gone (a writer held this link through Close): no
		// entry naming fd can be submitted any more, and none will be
		// answered. The buffers stay (uringSet.close keeps them).
		fd := l.fd
		l.fd = -1
		l.mu.Unlock()
		_ = unix.Close(fd)
		return
	}
	if l.ops > 0 {
		if !l.fdShut {
			l.fdShut = true
			_ = unix.Shutdown(l.fd, unix.SHUT_RDWR)
		}
		l.s.d.busy.Add(1)
		l.mu.Unlock()
		l.s.flush() // queued entries must reach the kernel to be answered
		l.s.d.wake()
		return
	}
	fd := l.fd
	l.fd = -1
	l.mu.Unlock()
	_ = unix.Close(fd)
	l.s.retire(l)
}
