//go:build linux && !redmux_portable

package mux

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// portable: this build's default transport is net.Conn.
const portable = false

// noSweeps leaves the poller of clients made from now until the test ends
// asleep (no sweep for an hour): what is read while the client is idle is
// then read by the callers' own enter and waits only.
func noSweeps(t testing.TB) {
	saved := maxSweepEvery
	maxSweepEvery = time.Hour
	t.Cleanup(func() { maxSweepEvery = saved })
}

// arrivedWhileIdle reports whether bytes a node sent while c was idle
// have reached c's transport, to be read by the next caller: on epoll once
// a connection's socket holds unread bytes (SIOCINQ: a loopback send is
// usually there when it returns, but a loaded kernel can defer it); on
// io_uring once the kernel has posted the armed receive's completion
// (uringArrived, in set_uring_linux_test.go). False on the net.Conn
// transport (TLS), whose reader goroutines read by themselves: a test
// waits for what they do with it instead.
func arrivedWhileIdle(c *Client) bool {
	d, ok := c.drv.(*tokenDriver)
	if !ok {
		return false
	}
	if uringArrived != nil {
		if arrived, isURing := uringArrived(d.set); isURing {
			return arrived
		}
	}
	for _, cn := range c.conns {
		if l, ok := cn.current().(*rawLink); ok {
			if n, err := unix.IoctlGetInt(l.fd, unix.SIOCINQ); err == nil && n > 0 {
				return true
			}
		}
	}
	return false
}

// uringArrived is set where the io_uring transport is built.
var uringArrived func(readySet) (arrived, isURing bool)
