package mux

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// netDriver runs every connection on Go's net.Conn: one reader goroutine
// per connection (blocking reads in the Go netpoller, with no read
// deadline), writes bounded at netWriteSlice each (what the socket has not
// taken by then is written later, through wantWrite), and a sweeper
// goroutine that aborts connections whose oldest outstanding reply is
// overdue (HardTimeout). It is the transport on systems other than Linux,
// with -tags redmux_portable, and for every client with a TLS node; same
// engine, same semantics, more goroutines.
type netDriver struct {
	c    *Client
	wg   sync.WaitGroup
	mu   sync.Mutex
	live map[*netLink]struct{}
}

var _ driver = (*netDriver)(nil)
var _ link = (*netLink)(nil)

func newNetDriver(c *Client) *netDriver {
	d := &netDriver{c: c, live: make(map[*netLink]struct{})}
	d.wg.Add(1)
	go d.sweep()
	return d
}

// sweep aborts overdue connections every HardTimeout/4 until Close.
func (d *netDriver) sweep() {
	defer d.wg.Done()
	c := d.c
	every := min(max(c.cfg.HardTimeout/4, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		now := mono()
		limit := now - int64(c.cfg.HardTimeout)
		for _, cn := range c.conns {
			if cn.overdue(now, limit) {
				cn.abort(ErrNodeDown, errOverdue)
			}
		}
	}
}

// dial connects to node with net.Dialer (TCP_NODELAY is Go's default;
// keepalive 15s), runs the TLS handshake for a TLS node (tls.go) and the
// set-up pipeline, all bounded by DialTimeout.
func (d *netDriver) dial(node, shard int) (link, error) {
	c := d.c
	ns := &c.cfg.nodes[node]
	if ns.cluster != nil {
		// the primary the slot map names for the shard (cluster.go)
		host, port, err := c.shardAddr(node, shard)
		if err != nil {
			return nil, err
		}
		return d.dialTo(node, shard, host, port, time.Now().Add(c.cfg.DialTimeout))
	}
	if ns.sentinel != nil {
		// the primary the sentinels name (sentinel.go)
		var l link
		err := c.dialViaSentinels(node, func(host string, port int, deadline time.Time) (err error) {
			l, err = d.dialTo(node, 0, host, port, deadline)
			return err
		})
		return l, err
	}
	return d.dialTo(node, 0, ns.host, ns.port, time.Now().Add(c.cfg.DialTimeout))
}

// dialTo is dial to host:port, by deadline.
func (d *netDriver) dialTo(node, shard int, host string, port int, deadline time.Time) (link, error) {
	c := d.c
	nd := net.Dialer{Deadline: deadline, KeepAlive: 15 * time.Second}
	nc, err := nd.DialContext(c.life, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, &setupError{step: "connect", text: err.Error()}
	}
	// Close ends the handshake and the set-up at once (not at
	// DialTimeout): it closes the connection under them.
	stop := context.AfterFunc(c.life, func() { _ = nc.Close() })
	l, err := d.setup(node, shard, nc, deadline)
	if !stop() { // Close has begun
		if l != nil {
			l.close()
		}
		return nil, ErrClosed
	}
	return l, err
}

// setup runs the TLS handshake (a TLS node) and the set-up pipeline on nc.
func (d *netDriver) setup(node, shard int, nc net.Conn, deadline time.Time) (link, error) {
	if d.c.cfg.nodes[node].tls != nil {
		return d.dialTLS(node, nc, deadline)
	}
	rest, err := runSetup(netRW{nc}, d.c.cfg, node, shard, deadline)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return &netLink{d: d, nc: nc, pre: rest}, nil
}

func (d *netDriver) closing() {} // dials watch the client's life context

func (d *netDriver) close() {
	d.mu.Lock()
	for l := range d.live {
		l.abort()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

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
		time.AfterFunc(time.Millisecond, cn.writable)
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
