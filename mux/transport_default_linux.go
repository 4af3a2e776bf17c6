//go:build linux && !redmux_portable

package mux

// newDriver picks the raw epoll transport, Linux's default, or the net.Conn
// transport for a client with TLS nodes (tls.go says why).
func newDriver(c *Client) (driver, error) {
	if c.cfg.tls {
		return newNetDriver(c), nil
	}
	d, err := newEpollDriver(c)
	if err != nil {
		return nil, err
	}
	return d, nil
}
