//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package poll

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is one io_uring instance over raw system calls (x/sys/unix has the
// numbers; the structures and constants are the kernel's,
// defs_uring_linux.go). The submission queue is shared: any
// goroutine fills entries under mu and any may submit them; the
// completion queue is read by one goroutine at a time (the reader-token
// holder). Entries refer to memory the caller keeps alive and unmoved
// until their completion is read (Go's heap does not move objects).
type Ring struct {
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

// The errors of Queue and Submit.
var (
	ErrRingFull   = errors.New("io_uring submission queue full")
	ErrRingClosed = errors.New("io_uring closed")
)

// enters counts io_uring_enter calls.
var enters atomic.Int64

// Enters returns how many io_uring_enter calls this process's rings have
// made (for tests and benchmarks).
func Enters() int64 { return enters.Load() }

// NewRing sets up a ring with room for at least entries submissions. It
// fails (the caller falls back to epoll) when the kernel lacks io_uring or
// the features used here (one mapping, no dropped completions, waits with
// a timeout: Linux 5.11), or a policy refuses it (seccomp, the
// kernel.io_uring_disabled sysctl).
func NewRing(entries uint32) (*Ring, error) {
	p := uringParams{flags: uringSetupClamp} // more than the kernel's maximum: its maximum
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, os.NewSyscallError("io_uring_setup", e)
	}
	r := &Ring{fd: int(fd)}
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

// Fd returns the ring's descriptor (readable while completions wait).
func (r *Ring) Fd() int { return r.fd }

// Queue adds one submission entry (not submitted yet: see Submit). inline
// marks an entry whose completion is posted while it is submitted.
func (r *Ring) Queue(e Entry, inline bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead {
		return ErrRingClosed
	}
	if r.tail-atomic.LoadUint32(r.sqHead) >= r.sqLen {
		return ErrRingFull
	}
	i := r.tail & r.sqMask
	r.sqes[i] = e.sqe
	r.sqArray[i] = i
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
	r.queued.Add(1)
	if inline {
		r.inline.Add(1)
	}
	return nil
}

// Queued reports whether entries wait for Submit.
func (r *Ring) Queued() bool { return r.queued.Load() != 0 }

// Submit hands every queued entry to the kernel and, with wait set, then
// waits up to ns (> 0) until at least need completions are in the ring
// (counting those the submitted entries posted at once). A wait that
// times out or is interrupted returns nil, as do entries the kernel did
// not take (queued again for the next Submit): the caller looks at the
// ring either way. An error is a closed ring or a failed io_uring_enter.
func (r *Ring) Submit(wait bool, need int, ns int64) error {
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
		return ErrRingClosed
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
	enters.Add(1)
	// A submission that does not wait cannot sleep in the kernel (what
	// would block is punted to the kernel's workers): it is made without
	// telling the scheduler, as the epoll transport's reads and writes are
	// (sys_raw_linux.go); a wait is a blocking call.
	var n uintptr
	var e unix.Errno
	if wait {
		n, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete),
			uintptr(flags), uintptr(argp), argSz)
	} else {
		n, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, 0, 0, 0)
	}
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
func (r *Ring) requeue(n uint32) {
	r.mu.Lock()
	r.queued.Add(int32(n))
	r.mu.Unlock()
}

// Reap calls fn for the completions in the ring when it starts, in order,
// and frees their places; those posted meanwhile wait for the next reap,
// so a connection that streams without end cannot keep the reader from
// its own call, Close and the other connections. One goroutine at a time.
func (r *Ring) Reap(fn func(userData uint64, res int32, flags uint32)) int {
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

// Peek calls fn for each completion in the ring now, without taking it,
// from a goroutine other than the one that reaps: one reaped meanwhile
// may be read torn (the caller must take what it reads as a hint). It
// does nothing once the ring is closed.
func (r *Ring) Peek(fn func(userData uint64, res int32)) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.dead {
		return
	}
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		e := r.cqes[head&r.cqMask]
		fn(e.userData, e.res)
	}
}

// Close unmaps the rings and closes the ring (the kernel cancels what is
// still in flight).
func (r *Ring) Close() {
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

// Closed reports whether Close ran.
func (r *Ring) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dead
}
