//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"runtime"
	"sync/atomic"
)

// The io_uring transport is built for 64-bit little-endian Linux (its
// structures are the kernel's as laid out there); elsewhere a client that
// asks for it runs on epoll (Linux) or net.Conn, and says why.

// uringEnters counts io_uring_enter calls (uring_linux.go); none here.
var uringEnters atomic.Int64

// uringRefused says why this build has no io_uring transport.
func uringRefused() error {
	return errors.New("io_uring transport not built for " + runtime.GOOS + "/" + runtime.GOARCH)
}
