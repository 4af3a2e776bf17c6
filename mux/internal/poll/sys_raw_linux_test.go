//go:build linux

package poll

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRawSyscalls: Write, Read and EpollNow on non-blocking descriptors
// return what x/sys/unix's wrappers would: the bytes moved, EAGAIN where
// nothing is ready or nothing fits (never a wait), EBADF for no
// descriptor, and the ready events with their tags.
func TestRawSyscalls(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fds[0], fds[1]
	defer func() { _ = unix.Close(a); _ = unix.Close(b) }()
	buf := make([]byte, 64)
	if n, err := Read(b, buf); err != unix.EAGAIN || n != 0 {
		t.Fatalf("Read of an empty socket = %d, %v; want 0, EAGAIN", n, err)
	}
	p, err := NewEpoll(4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Add(b, 7, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	evs := make([]unix.EpollEvent, 4)
	if n, err := EpollNow(p.fd, evs); err != nil || n != 0 {
		t.Fatalf("EpollNow with nothing ready = %d, %v; want 0, nil", n, err)
	}
	msg := []byte("*1\r\n$4\r\nPING\r\n")
	if n, err := Write(a, msg); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(msg))
	}
	if n, err := Write(a, nil); err != nil || n != 0 {
		t.Fatalf("Write of nothing = %d, %v; want 0, nil", n, err)
	}
	if n, err := EpollNow(p.fd, evs); err != nil || n != 1 || evs[0].Fd != 7 || evs[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("EpollNow after a write = %d, %v, %+v; want one EPOLLIN tagged 7", n, err, evs[0])
	}
	if n, err := Read(b, buf); err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("Read = %q, %v; want %q", buf[:n], err, msg)
	}
	// A full socket: Write returns what it took, then EAGAIN.
	big := make([]byte, 1<<20)
	total := 0
	for i := 0; i < 64; i++ {
		n, err := Write(a, big)
		total += n
		if err == unix.EAGAIN {
			break
		}
		if err != nil || n <= 0 {
			t.Fatalf("Write to a filling socket = %d, %v", n, err)
		}
		if i == 63 {
			t.Fatal("64 MiB written to a socket no one reads: never EAGAIN")
		}
	}
	if total == 0 {
		t.Fatal("a full socket took nothing")
	}
	if n, err := Read(-1, buf); err != unix.EBADF || n != 0 {
		t.Fatalf("Read of no descriptor = %d, %v; want 0, EBADF", n, err)
	}
	if n, err := Write(-1, msg); err != unix.EBADF || n != 0 {
		t.Fatalf("Write to no descriptor = %d, %v; want 0, EBADF", n, err)
	}
}
