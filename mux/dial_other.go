//go:build !linux || redmux_portable

package mux

import (
	"net"
	"strconv"
	"time"
)

// dial connects to node i with net.Dialer (TCP_NODELAY is Go's default;
// keepalive 15s), bounded by DialTimeout, and runs the set-up pipeline.
func (c *Client) dial(i int) (*handle, error) {
	deadline := time.Now().Add(c.cfg.DialTimeout)
	d := net.Dialer{Deadline: deadline, KeepAlive: 15 * time.Second}
	nc, err := d.DialContext(c.life, "tcp", net.JoinHostPort(c.cfg.hosts[i], strconv.Itoa(c.cfg.ports[i])))
	if err != nil {
		return nil, &setupError{step: "connect", text: err.Error()}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	rest, err := runSetup(netRW{nc}, c.cfg, deadline)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return &handle{nc: nc, rest: rest}, nil
}

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
