package mux

import (
	"context"
	"net"
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
	c      *Client
	wg     sync.WaitGroup
	mu     sync.Mutex
	live   map[*netLink]struct{}
	closed bool // close has begun: spawn starts nothing more
}

var _ driver = (*netDriver)(nil)

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
	// where: as the node's topology says (its address, the primary the
	// sentinels name, the shard's primary in the slot map)
	var l link
	err := d.c.nodes[node].topo.dial(d.c, node, shard, func(host string, port int, deadline time.Time) (func(), error) {
		var err error
		l, err = d.dialTo(node, shard, host, port, deadline)
		return func() { l.close() }, err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
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

// spawn runs f on a goroutine that close waits for, unless close has
// begun (then it reports false and runs nothing: the connections are
// being closed, nothing is left to write).
func (d *netDriver) spawn(f func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f()
	}()
	return true
}

func (d *netDriver) close() {
	d.mu.Lock()
	d.closed = true
	for l := range d.live {
		l.abort()
	}
	d.mu.Unlock()
	d.wg.Wait()
}
