//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package poll

import "unsafe"

// Entry is one submission entry for Ring.Queue, built by the functions
// below: the one place where a Go slice becomes an address the kernel
// reads. userData comes back with the entry's completion (Ring.Reap).
type Entry struct {
	sqe uringSQE
}

// SendEntry sends p (not empty) on socket fd with flags (send(2)'s).
// p must stay alive and unchanged until the completion is reaped.
func SendEntry(fd int, p []byte, flags uint32, userData uint64) Entry {
	return Entry{uringSQE{opcode: uringOpSend, fd: int32(fd), addr: uint64(uintptr(unsafe.Pointer(&p[0]))),
		len: uint32(len(p)), opFlags: flags, userData: userData}}
}

// RecvEntry receives from socket fd into a buffer the kernel takes from
// group (a BufRing's) when the bytes arrive; the completion names it
// (BufferID).
func RecvEntry(fd int, group uint16, userData uint64) Entry {
	return Entry{uringSQE{opcode: uringOpRecv, flags: uringSQEBufferSelect, fd: int32(fd), bufIndex: group, userData: userData}}
}

// PollEntry completes once fd has one of events (poll(2)'s, one shot).
func PollEntry(fd int, events uint32, userData uint64) Entry {
	return Entry{uringSQE{opcode: uringOpPollAdd, fd: int32(fd), opFlags: events, userData: userData}}
}

// NopEntry does nothing but complete (fd is recorded, not used).
func NopEntry(fd int, userData uint64) Entry {
	return Entry{uringSQE{opcode: uringOpNop, fd: int32(fd), userData: userData}}
}

// BufferID returns the id of the provided buffer a receive's completion
// filled, from the completion's flags, and whether there is one.
func BufferID(flags uint32) (id uint16, ok bool) {
	return uint16(flags >> 16), flags&uringCQEFBuffer != 0
}
