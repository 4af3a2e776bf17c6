//go:build !linux || !(amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"runtime"
)

// The io_uring transport is built for 64-bit little-endian Linux (its
// structures are the kernel's as laid out there); elsewhere a client that
// asks for it runs on epoll (Linux) or net.Conn, and says why.

// uringEnters counts io_uring_enter calls; none here.
func uringEnters() int64 { return 0 }

// uringRefused says why this build has no io_uring transport.
func uringRefused() error {
	return errors.New("io_uring transport not built for " + runtime.GOOS + "/" + runtime.GOARCH)
}
