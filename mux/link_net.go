package mux

import (
	"errors"
	"net"
	"os"
	"time"
)

var _ link = (*netLink)(nil)

// netLink is one net.Conn: a TCP connection, or a *tls.Conn over sc.
type netLink struct {
	d   *netDriver
	nc  net.Conn
	cn  *pconn
	sc  *spillConn // TLS: the TCP connection under nc; nil for plaintext
	pre []byte     // read past the set-up replies (push frames): read first
}

// netWriteSlice bounds one blocking write: a writer (a caller of Do) that
// finds the socket full for longer leaves the rest to a background flush,
// so its own deadline is kept. Chosen, not measured: well under the 50ms
// default Timeout, and longer than a lock command's write into a socket
// with room (microseconds), so it only matters for a stalled node.
const netWriteSlice = 2 * time.Millisecond

func (l *netLink) write(p []byte) (int, error) {
	if l.sc != nil {
		return l.sc.writeTLS(l.nc, p)
	}
	_ = l.nc.SetWriteDeadline(time.Now().Add(netWriteSlice))
	n, err := l.nc.Write(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return n, nil // socket full: the engine resumes through wantWrite
	}
	return n, err
}

func (l *netLink) read(p []byte) (int, error) {
	if len(l.pre) > 0 {
		n := copy(p, l.pre)
		l.pre = l.pre[n:]
		return n, nil
	}
	return l.nc.Read(p)
}

func (l *netLink) nonBlocking() bool { return false }

// wantWrite(true) resumes writing from a goroutine shortly: net.Conn has
// no writability notification, so a full socket is retried every
// millisecond or two until it drains (or HardTimeout replaces it).
func (l *netLink) wantWrite(on bool) error {
	if on && l.sc != nil {
		l.sc.wantWrite(l.cn)
		return nil
	}
	if on {
		cn := l.cn
		l.d.spawn(func() {
			time.Sleep(time.Millisecond)
			cn.writable()
		})
	}
	return nil
}

// start runs the connection's reader goroutine.
func (l *netLink) start(cn *pconn) error {
	l.cn = cn
	if l.sc != nil {
		l.sc.mu.Lock()
		l.sc.cn = cn
		l.sc.mu.Unlock()
	}
	d := l.d
	d.mu.Lock()
	d.live[l] = struct{}{}
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for cn.readable(l) {
		}
	}()
	return nil
}

func (l *netLink) unregister() {
	l.d.mu.Lock()
	delete(l.d.live, l)
	l.d.mu.Unlock()
}

// abort and close close the TCP connection (under a TLS one too: no
// close_notify, which could wait behind a blocked write).
func (l *netLink) abort() { _ = l.tcp().Close() }

func (l *netLink) close() { _ = l.tcp().Close() }

func (l *netLink) tcp() net.Conn {
	if l.sc != nil {
		return l.sc.Conn
	}
	return l.nc
}

// netRW is blocking-with-deadline I/O for the set-up pipeline.
type netRW struct{ nc net.Conn }

func (r netRW) write(b []byte, deadline time.Time) error {
	_ = r.nc.SetWriteDeadline(deadline)
	_, err := r.nc.Write(b)
	return err
}

func (r netRW) read(b []byte, deadline time.Time) (int, error) {
	_ = r.nc.SetReadDeadline(deadline)
	return r.nc.Read(b)
}
