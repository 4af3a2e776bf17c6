//go:build !linux || redmux_portable

package mux

// newDriver picks the net.Conn transport (other systems, or Linux built
// with -tags redmux_portable), with or without TLS.
func newDriver(c *Client) (driver, error) { return newNetDriver(c), nil }
