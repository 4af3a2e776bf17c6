//go:build linux && !redmux_portable

package mux

import (
	"errors"
	"syscall"
	"testing"
)

// TestNewOutOfDescriptors (issue 34): New that cannot create its own
// descriptors (the close eventfd, the epoll instance: the process is at
// its open-file limit) returns an error that wraps ErrConfig, the kind
// New's errors have, and the cause (EMFILE); it was a bare "eventfd: too
// many open files".
func TestNewOutOfDescriptors(t *testing.T) {
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	// A new descriptor is the lowest free one: a limit of its number
	// leaves none, and the first New makes, the eventfd, fails.
	free, err := syscall.Dup(0)
	if err != nil {
		t.Skipf("dup: %v", err)
	}
	_ = syscall.Close(free)
	low := saved
	low.Cur = uint64(free)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	c, err := New(Config{Addrs: []string{"127.0.0.1:1"}})
	if rerr := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil {
		_ = c.Close()
		t.Fatal("New succeeded with no descriptor left")
	}
	t.Log(err)
	if !errors.Is(err, ErrConfig) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("New: %v: want ErrConfig wrapping EMFILE", err)
	}
}
