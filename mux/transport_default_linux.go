//go:build linux && !redmux_portable

package mux

// newDriver picks the raw epoll transport, Linux's default.
func newDriver(c *Client) (driver, error) {
	d, err := newEpollDriver(c)
	if err != nil {
		return nil, err
	}
	return d, nil
}
