//go:build linux && !redmux_portable

package mux

// testTransport, set by the package's tests (REDMUX_TEST_TRANSPORT),
// replaces the default transport of clients that do not name one, so the
// whole suite runs on io_uring too.
var testTransport Transport

// newDriver picks the raw socket transport Config.Transport names (epoll
// by default; io_uring falls back to epoll when refused), or the net.Conn
// transport for a client with TLS nodes (tls.go says why).
func newDriver(c *Client) (driver, error) {
	if c.cfg.tls {
		c.transport = "net.Conn"
		return newNetDriver(c), nil
	}
	want := c.cfg.Transport
	if want == TransportEpoll {
		want = testTransport
	}
	var refused string
	if want == TransportIOURing {
		d, err := newURingDriver(c)
		if err == nil {
			c.transport = TransportIOURing.String()
			return d, nil
		}
		refused = " (io_uring refused: " + err.Error() + ")"
	}
	d, err := newEpollDriver(c)
	if err != nil {
		return nil, err
	}
	c.transport = TransportEpoll.String() + refused
	return d, nil
}
