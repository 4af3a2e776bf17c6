// Package poll is mux's kernel layer: on Linux, one epoll instance with
// its netpoller watch (Epoll), an io_uring (Ring) with its rings of
// provided receive buffers (BufRing), the kernel's structures and
// constants, and typed builders for the submission entries mux queues
// (SendEntry, RecvEntry, PollEntry, NopEntry), and the hot path's reads
// and writes on non-blocking descriptors (Write, Read, EpollNow: raw
// system calls the scheduler is not told of), so that unsafe and raw
// system call numbers live here alone: package mux hands over slices,
// descriptors and user data, never a pointer. Like Go's internal/poll
// under net, it knows nothing of connections, replies or callers.
//
// Files, one naming scheme (part_mechanism): poller_epoll_linux.go
// (Epoll), ring_uring_linux.go (Ring), bufring_uring_linux.go (BufRing,
// the one probe), entry_uring_linux.go (the entry builders),
// defs_uring_linux.go (the kernel's io_uring structures and constants),
// sys_raw_linux.go (Write, Read, EpollNow) with its race detector hooks
// (sys_race_linux.go, sys_norace_linux.go).
// The io_uring files build on 64-bit little-endian Linux only (the
// structures are laid out as there); elsewhere the package is empty.
package poll
