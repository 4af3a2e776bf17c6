//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uring is one io_uring instance over raw system calls (x/sys/unix has the
// numbers; the structures and constants below are the kernel's,
// include/uapi/linux/io_uring.h). The submission queue is shared: any
// goroutine fills entries under mu and any may submit them; the
// completion queue is read by one goroutine at a time (the reader-token
// holder). Entries refer to memory the caller keeps alive and unmoved
// until their completion is read (Go's heap does not move objects).
type uring struct {
	fd      int
	ringMem []byte // the SQ and CQ rings (one mapping: IORING_FEAT_SINGLE_MMAP)
	sqeMem  []byte // the submission entries
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	sqes    []uringSQE
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []uringCQE
	sqLen   uint32

	// life is held (read) across every submission and taken (write) by
	// close, so the rings are never unmapped, nor the descriptor closed,
	// under a system call or a queue that uses them; dead (under both)
	// refuses both from then on: Close does not wait for callers still
	// inside Do.
	life sync.RWMutex
	dead bool

	mu      sync.Mutex // guards the SQ tail, queued and inline
	tail    uint32     // our copy of the SQ tail (published to *sqTail at once)
	queued  atomic.Int32
	inline  atomic.Int32 // queued entries that complete during their submission (MSG_DONTWAIT sends)
	timeout unix.Timespec
	arg     uringGeteventsArg
}

// The kernel's structures.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32 // msg_flags, poll32_events
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	pad         uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringGeteventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWaitUs uint32
	ts        uint64
}

const (
	uringOpNop = 0

	uringSQEBufferSelect    = 1 << 5 // sqe.flags: take a buffer from the group in bufIndex
	uringCQEFBuffer         = 1 << 0 // cqe.flags: a buffer was used, its id in the high 16 bits
	uringRegisterPbufRing   = 22
	uringUnregisterPbufRing = 23
	uringOpPollAdd          = 6
	uringOpSend             = 26
	uringOpRecv             = 27

	uringEnterGetevents = 1 << 0
	uringEnterExtArg    = 1 << 3

	uringSetupClamp = 1 << 4

	uringFeatSingleMmap = 1 << 0
	uringFeatNodrop     = 1 << 1
	uringFeatExtArg     = 1 << 8

	uringOffSQRing = 0
	uringOffSQEs   = 0x10000000
)

var (
	errURingFull   = errors.New("io_uring submission queue full")
	errURingClosed = errors.New("io_uring closed")
)

// uringEnters counts io_uring_enter calls (for tests and benchmarks).
var uringEnters atomic.Int64

// uringSetup sets up a ring (a test replaces it to see the fallback).
var uringSetup = newURing

// newURing sets up a ring with room for at least entries submissions. It
// fails (the caller falls back to epoll) when the kernel lacks io_uring or
// the features used here (one mapping, no dropped completions, waits with
// a timeout: Linux 5.11), or a policy refuses it (seccomp, the
// kernel.io_uring_disabled sysctl).
func newURing(entries uint32) (*uring, error) {
	p := uringParams{flags: uringSetupClamp} // more than the kernel's maximum: its maximum
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, os.NewSyscallError("io_uring_setup", e)
	}
	r := &uring{fd: int(fd)}
	const want = uringFeatSingleMmap | uringFeatNodrop | uringFeatExtArg
	if p.features&want != want {
		_ = unix.Close(r.fd)
		return nil, errors.New("io_uring: the kernel lacks single mmap, nodrop or ext_arg (Linux 5.11)")
	}
	sqSize := p.sqOff.array + p.sqEntries*4
	cqSize := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{}))
	size := max(sqSize, cqSize)
	mem, err := unix.Mmap(r.fd, uringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Close(r.fd)
		return nil, os.NewSyscallError("mmap(io_uring rings)", err)
	}
	sqeMem, err := unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		_ = unix.Munmap(mem)
		_ = unix.Close(r.fd)
		return nil, os.NewSyscallError("mmap(io_uring entries)", err)
	}
	r.ringMem, r.sqeMem = mem, sqeMem
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail = u32(p.sqOff.head), u32(p.sqOff.tail)
	r.sqMask, r.sqLen = *u32(p.sqOff.ringMask), p.sqEntries
	r.sqArray = unsafe.Slice(u32(p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.cqHead, r.cqTail = u32(p.cqOff.head), u32(p.cqOff.tail)
	r.cqMask = *u32(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&mem[p.cqOff.cqes])), p.cqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

// queue adds one submission entry (not submitted yet: see submit). inline
// marks an entry whose completion is posted while it is submitted.
func (r *uring) queue(e uringSQE, inline bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return errURingClosed
	}
	if r.tail-atomic.LoadUint32(r.sqHead) >= r.sqLen {
		return errURingFull
	}
	i := r.tail & r.sqMask
	r.sqes[i] = e
	r.sqArray[i] = i
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
	r.queued.Add(1)
	if inline {
		r.inline.Add(1)
	}
	return nil
}

// submit hands every queued entry to the kernel and, with wait set, then
// waits up to ns (> 0) until at least need completions are in the ring
// (counting those the submitted entries posted at once). A wait that
// times out or is interrupted returns nil, as do entries the kernel did
// not take (queued again for the next submit): the caller looks at the
// ring either way. An error is a closed ring or a failed io_uring_enter.
func (r *uring) submit(wait bool, need int, ns int64) error {
	r.life.RLock()
	defer r.life.RUnlock()
	// Both counters at once: a send counted in inline but not in
	// toSubmit would make the wait ask for a completion never submitted.
	r.mu.Lock()
	dead := r.dead
	toSubmit := uint32(r.queued.Swap(0))
	inline := r.inline.Swap(0)
	r.mu.Unlock()
	if dead {
		return errURingClosed
	}
	if toSubmit == 0 && !wait {
		return nil
	}
	var flags, minComplete uint32
	var argp unsafe.Pointer
	var argSz uintptr
	if wait {
		flags = uringEnterGetevents | uringEnterExtArg
		minComplete = uint32(need) + uint32(inline)
		r.timeout = unix.NsecToTimespec(ns)
		r.arg = uringGeteventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.timeout)))}
		argp, argSz = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
	}
	uringEnters.Add(1)
	n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete),
		uintptr(flags), uintptr(argp), argSz)
	switch e {
	case 0:
		if uint32(n) < toSubmit {
			// The kernel took fewer (out of memory for a moment): the
			// rest goes with the next submission.
			r.requeue(toSubmit - uint32(n))
		}
		return nil
	case unix.ETIME, unix.EINTR:
		return nil
	case unix.EAGAIN, unix.EBUSY:
		// Completions are backed up: the caller reads them and submits
		// again.
		r.requeue(toSubmit)
		return nil
	default:
		return os.NewSyscallError("io_uring_enter", e)
	}
}

// requeue counts n entries the kernel did not take as queued again.
func (r *uring) requeue(n uint32) {
	r.mu.Lock()
	r.queued.Add(int32(n))
	r.mu.Unlock()
}

// reap calls fn for the completions in the ring when it starts, in order,
// and frees their places; those posted meanwhile wait for the next reap,
// so a connection that streams without end cannot keep the reader from
// its own call, Close and the other connections. One goroutine at a time.
func (r *uring) reap(fn func(userData uint64, res int32, flags uint32)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := int(tail - head)
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		atomic.StoreUint32(r.cqHead, head+1) // the entry is copied: its place is free
		fn(c.userData, c.res, c.flags)
	}
	return n
}

// close unmaps the rings and closes the ring (the kernel cancels what is
// still in flight).
func (r *uring) close() {
	r.life.Lock()
	defer r.life.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return
	}
	r.dead = true
	_ = unix.Munmap(r.sqeMem)
	_ = unix.Munmap(r.ringMem)
	_ = unix.Close(r.fd)
}

// closed reports whether close ran.
func (r *uring) closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}

// bufRing is a ring of receive buffers registered with a uring (provided
// buffers): a receive takes one when its bytes arrive, and the reader
// gives it back once it has read it, by a store to shared memory (no
// system call). The buffers and the ring are mapped outside Go's heap,
// so memory the kernel may still write to is never collected.
type bufRing struct {
	mem     []byte // the ring's entries (16 bytes each; the tail overlays entry 0's last 2)
	bufs    []byte // n buffers of size bytes
	size    int
	mask    uint16
	tail    uint16
	bid0    uint16  // entry 0's buffer id as last written (shares a word with the tail)
	tailW   *uint32 // the word at offset 12: entry 0's bid, then the tail
	group   uint16
	entries []uringBuf
}

// uringBuf is struct io_uring_buf.
type uringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// uringBufReg is struct io_uring_buf_reg.
type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// newBufRing registers n (a power of 2) buffers of size bytes as group
// group of r and hands them all to the kernel (Linux 5.19).
func newBufRing(r *uring, group uint16, n uint16, size int) (*bufRing, error) {
	mem, err := unix.Mmap(-1, 0, int(n)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap(io_uring buffer ring)", err)
	}
	bufs, err := unix.Mmap(-1, 0, int(n)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, os.NewSyscallError("mmap(io_uring buffers)", err)
	}
	b := &bufRing{mem: mem, bufs: bufs, size: size, mask: n - 1, group: group,
		tailW:   (*uint32)(unsafe.Pointer(&mem[12])),
		entries: unsafe.Slice((*uringBuf)(unsafe.Pointer(&mem[0])), n)}
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: uint32(n), bgid: group}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		b.unmap()
		return nil, os.NewSyscallError("io_uring_register(PBUF_RING)", e)
	}
	for i := uint16(0); i < n; i++ {
		b.put(i)
	}
	return b, nil
}

// buf returns buffer id's first n bytes.
func (b *bufRing) buf(id uint16, n int) []byte {
	off := int(id) * b.size
	return b.bufs[off : off+n : off+b.size]
}

// put gives buffer id back to the kernel (one goroutine at a time: the
// token holder, or the set-up).
func (b *bufRing) put(id uint16) {
	i := b.tail & b.mask
	e := &b.entries[i]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.bufs[int(id)*b.size])))
	e.len = uint32(b.size)
	if i == 0 {
		b.bid0 = id // entry 0's bid goes out with the tail, below; its resv is the tail
	} else {
		e.bid = id
	}
	b.tail++
	// The tail is entry 0's last two bytes: store it with entry 0's id
	// in one atomic word (this goroutine is the ring's only writer).
	atomic.StoreUint32(b.tailW, uint32(b.bid0)|uint32(b.tail)<<16)
}

// unregister takes the group back from r (its receives are all answered).
func (b *bufRing) unregister(r *uring) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.closed() {
		return // the ring's end took the group with it (and fd may be another's now)
	}
	reg := uringBufReg{bgid: b.group}
	_, _, _ = unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringUnregisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
}

func (b *bufRing) unmap() {
	_ = unix.Munmap(b.bufs)
	_ = unix.Munmap(b.mem)
}

// uringRefused returns why this machine refuses the io_uring transport
// (the ring or its provided buffers cannot be set up), or nil.
func uringRefused() error {
	r, err := uringSetup(8)
	if err != nil {
		return err
	}
	defer r.close()
	return probeBufRing(r)
}

// probeBufRing reports whether r takes a group of provided buffers
// (Linux 5.19), registering one under group probeGroup and taking it
// back: the one probe, for uringRefused and for New, so a kernel without
// them falls back to epoll at New rather than failing every connection.
func probeBufRing(r *uring) error {
	b, err := newBufRing(r, probeGroup, 1, uringRecvBuf)
	if err != nil {
		return err
	}
	b.unregister(r)
	b.unmap()
	return nil
}

// probeGroup is the buffer group id probeBufRing uses (no link's: a
// link's group is its id, below it).
const probeGroup = 0xffff
