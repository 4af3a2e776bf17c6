//go:build !linux || redmux_portable

package mux

import "testing"

// portable: this build's default transport is net.Conn.
const portable = true

// noSweeps: the net.Conn transport reads every connection in its own
// goroutine; there is no poller to put to sleep.
func noSweeps(testing.TB) {}

// arrivedWhileIdle: each connection's reader goroutine reads what
// arrives by itself; a test waits for what it does with it instead.
func arrivedWhileIdle(*Client) bool { return false }
