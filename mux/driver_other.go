//go:build !linux || redmux_portable

package mux

// testTransport is the Linux tests' transport switch; net.Conn runs here.
var testTransport Transport

// newDriver picks the net.Conn transport (other systems, or Linux built
// with -tags redmux_portable), with or without TLS.
func newDriver(c *Client) (driver, error) {
	c.transport = "net.Conn"
	return newNetDriver(c), nil
}
