//go:build linux

package poll

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Write, Read and EpollNow are the hot path's system calls on
// non-blocking descriptors, made without telling the Go scheduler
// (RawSyscall: no entersyscall/exitsyscall). None of them waits for data,
// room or events (at most for a socket's lock, briefly): the socket is
// non-blocking and EpollNow's timeout is 0, so the P they hold is held as
// by any running goroutine, for the call's few microseconds. A call the
// scheduler is told of costs its bookkeeping twice, and while such calls
// keep coming, the runtime's monitor thread (sysmon) finds a P "in a
// system call" at most of its checks, so it never backs off from its
// 20 µs period and takes a context switch each time
// (results/cost/README.md, thirteenth session: 0.85x the client CPU per
// SET at -c 256, half the context switches). Race builds tell the
// detector which bytes a write read and a read wrote, as x/sys/unix's
// wrappers do (sys_race_linux.go).

// Write writes p to the non-blocking descriptor fd.
func Write(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	if raceEnabled {
		raceReadRange(unsafe.Pointer(&p[0]), int(n))
	}
	return int(n), nil
}

// Read reads into p from the non-blocking descriptor fd.
func Read(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	if raceEnabled && n > 0 {
		raceWriteRange(unsafe.Pointer(&p[0]), int(n))
	}
	return int(n), nil
}

// EpollNow is epoll_wait with a zero timeout: the events ready now
// (events must not be empty).
func EpollNow(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	if raceEnabled && n > 0 {
		raceWriteRange(unsafe.Pointer(&events[0]), int(n)*int(unsafe.Sizeof(events[0])))
	}
	return int(n), nil
}
