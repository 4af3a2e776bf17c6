//go:build linux && !redmux_portable

package mux

// testTransport, set by the package's tests (REDMUX_TEST_TRANSPORT),
// replaces the transport of clients that do not name one
// (TransportAuto), so the whole suite runs on io_uring too.
var testTransport Transport

// newDriver picks the raw socket transport Config.Transport names
// (TransportAuto, the default: epoll with a lone caller's direct wait;
// TransportIOURing falls back to epoll when refused), or the net.Conn
// transport for a client with TLS nodes (tls.go says why).
func newDriver(c *Client) (driver, error) {
	if c.cfg.tls {
		c.transport = "net.Conn"
		return newNetDriver(c), nil
	}
	want := c.cfg.Transport
	if want == TransportAuto && testTransport != TransportAuto {
		want = testTransport
	}
	note := ""
	if want == TransportIOURing {
		d, err := newURingDriver(c)
		if err == nil {
			c.transport = TransportIOURing.String()
			return d, nil
		}
		note = "io_uring refused: " + err.Error()
	}
	direct := c.cfg.DirectWait
	if want == TransportAuto {
		note = "auto"
		if direct == 0 && !c.cfg.directOff {
			direct = DefaultDirectWait // the lone caller waits in the kernel by default
		}
	}
	d, err := newEpollDriver(c, direct)
	if err != nil {
		return nil, err
	}
	c.transport = TransportEpoll.String() + paren(note)
	return d, nil
}

// paren returns " (s)", or "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
