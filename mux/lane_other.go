//go:build !linux || redmux_portable

package mux

// The portable fallback: net.Conn instead of raw sockets and epoll. Same
// API and semantics, slower: every node's commands are written first (a
// batch larger than bigWrite is written by a helper goroutine, joined
// before Do returns, while replies are read), then replies are read
// round-robin, each read bounded by a 1ms slice (a node that has not
// answered costs up to a slice per round), and Close wakes blocked reads
// through their deadlines. The zero-allocation guarantee is Linux's only.

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

type sock struct{ nc net.Conn }

func (s *sock) valid() bool { return s.nc != nil }

type handle struct {
	nc   net.Conn
	rest []byte
}

func (h *handle) close() { _ = h.nc.Close() }

// clientPlat tracks live connections so that Close can wake blocked reads.
type clientPlat struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func (p *clientPlat) open() error {
	p.conns = make(map[net.Conn]struct{})
	return nil
}

func (p *clientPlat) add(nc net.Conn) {
	p.mu.Lock()
	p.conns[nc] = struct{}{}
	p.mu.Unlock()
}

func (p *clientPlat) remove(nc net.Conn) {
	p.mu.Lock()
	delete(p.conns, nc)
	p.mu.Unlock()
}

func (p *clientPlat) signal() {
	p.mu.Lock()
	for nc := range p.conns {
		_ = nc.SetDeadline(time.Unix(1, 0))
	}
	p.mu.Unlock()
}

func (p *clientPlat) close() {}

type lanePlat struct{}

const (
	initialReadBuf = 16 << 10
	bigWrite       = 256 << 10
	readSlice      = time.Millisecond
)

func newLane(c *Client) (*lane, error) {
	return &lane{c: c, conns: make([]conn, c.n), run: make([]nodeRun, c.n)}, nil
}

func (l *lane) attach(i int, h *handle) {
	cn := &l.conns[i]
	cn.nc = h.nc
	l.c.plat.add(h.nc)
	cn.resetState()
	if cn.rbuf == nil {
		cn.rbuf = make([]byte, initialReadBuf)
	}
	if len(h.rest) > len(cn.rbuf) {
		cn.rbuf = make([]byte, 2*len(h.rest))
	}
	cn.w = copy(cn.rbuf, h.rest)
	if l.c.closed.Load() {
		_ = h.nc.SetDeadline(time.Unix(1, 0))
	}
}

func (l *lane) closeConn(i int) {
	cn := &l.conns[i]
	l.c.plat.remove(cn.nc)
	_ = cn.nc.Close()
	cn.nc = nil
}

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
}

type bgWrite struct {
	node int
	n    int
	err  error
}

func (l *lane) do(b *Batch, start, deadline int64) (Outcome, error) {
	l.begin(b)
	dl := monoBase.Add(time.Duration(deadline))
	var wg sync.WaitGroup
	var bg []*bgWrite
	for i := range l.run {
		st := &l.run[i]
		if !st.active || st.done || !l.prepare(i, start) {
			continue
		}
		cn := &l.conns[i]
		_ = cn.nc.SetWriteDeadline(dl)
		if len(b.cmds[i]) > bigWrite {
			w := &bgWrite{node: i}
			bg = append(bg, w)
			st.written = len(b.cmds[i]) // replies may be matched while it writes
			wg.Add(1)
			go func(nc net.Conn, data []byte) {
				defer wg.Done()
				w.n, w.err = nc.Write(data)
			}(cn.nc, b.cmds[i])
			continue
		}
		n, err := cn.nc.Write(b.cmds[i])
		st.written = n
		if err != nil {
			if n > 0 || !isTimeout(err) {
				l.broken(i, err)
			}
			continue
		}
	}
	// Read round-robin, each read bounded by a short slice, so that the
	// nodes that have answered are seen even while another is slow.
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
		if mono() >= deadline {
			break
		}
		for i := range l.run {
			st := &l.run[i]
			if st.active && !st.done && l.conns[i].valid() && !l.decided {
				// A fresh slice per read: Go does not even try a read
				// whose deadline has passed.
				sl := mono() + int64(readSlice)
				if sl > deadline {
					sl = deadline
				}
				l.readConn(i, monoBase.Add(time.Duration(sl)))
			}
		}
	}
	if bg != nil {
		for _, w := range bg {
			_ = l.conns[w.node].nc.SetWriteDeadline(time.Unix(1, 0))
		}
		wg.Wait()
		for _, w := range bg {
			st := &l.run[w.node]
			if w.err != nil && !st.done {
				l.broken(w.node, w.err)
			}
		}
	}
	out := l.finish(start)
	if closed {
		return out, ErrClosed
	}
	return out, ctxErr
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// readConn reads once from node i (until dl) and parses; false when the
// read timed out or the connection broke.
func (l *lane) readConn(i int, dl time.Time) bool {
	cn := &l.conns[i]
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
	_ = cn.nc.SetReadDeadline(dl)
	n, err := cn.nc.Read(cn.rbuf[cn.w:])
	if n > 0 {
		cn.w += n
		l.ingest(i)
	}
	if err != nil {
		if isTimeout(err) {
			return false
		}
		if cn.valid() {
			l.broken(i, err)
		}
		return false
	}
	return cn.valid()
}

func (l *lane) flush(int) {}

// queueWrite writes extra (NOSCRIPT fallback) at once.
func (l *lane) queueWrite(i int, extra []byte) {
	cn := &l.conns[i]
	if _, err := cn.nc.Write(extra); err != nil {
		l.broken(i, err)
	}
}

func (l *lane) unqueue(int) {}

// drain reads what has arrived on node i within a millisecond.
func (l *lane) drain(i int) { l.readConn(i, time.Now().Add(time.Millisecond)) }
