//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/redmux/redmux/mux/internal/poll"
)

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

// write queues p: at most one send is in flight per link; what callers
// write meanwhile collects in a second buffer (nbuf) and goes when the
// first completes (nextSend).
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

// nextSend sends what collected in nbuf, if anything (l.mu held). When
// nothing did, the link is idle: the kernel is done with sbuf and nbuf is
// empty, and a buffer a large batch grew past uringSendKeep goes (while
// batches keep coming, the two buffers alternate and nothing is
// allocated).
func (l *uringLink) nextSend() {
	l.sending = false
	if len(l.nbuf) == 0 || l.closed {
		if cap(l.sbuf) > uringSendKeep {
			l.sbuf = nil
		}
		if cap(l.nbuf) > uringSendKeep {
			l.nbuf = nil
		}
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

// postRecv arms the receive (at start, and after each arrival): one at a
// time, into one of the link's own provided buffers (poll.BufRing, a group
// per link, so a node that streams without end exhausts only its own),
// given back with no system call once parsed. It goes to the kernel with
// the next submission (the leader's wait, or the flush when the leader
// gives the token back), so an idle connection is read too: a stray reply
// is seen before the next call's commands go out, as with epoll. Not a
// multishot receive: the kernel completes a receive on the thread that
// submitted it, and one armed once is answered by a thread other than the
// waiting leader's, woken for each arrival (3 more futex calls per pair,
// and slower, measured side by side); one submitted in the leader's own
// wait is completed inside that wait.
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
	//mutant:uring-replaced-receive
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
			k, err := poll.Read(l.fd, p)
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
// shuts the socket down and leaves the close to the last completion: a
// number the kernel still holds is never reused under it, and the link
// and its buffers stay in the set's table until then (retire).
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
