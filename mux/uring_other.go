//go:build !linux

package mux

import "sync/atomic"

// uringEnters counts io_uring_enter calls on Linux (uring_linux.go); none
// here.
var uringEnters atomic.Int64
