//go:build linux && !redmux_portable

package mux

// portable: this build's default transport is net.Conn.
const portable = false
