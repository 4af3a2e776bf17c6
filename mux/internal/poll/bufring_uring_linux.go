//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package poll

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a ring of receive buffers registered with a Ring (provided
// buffers): a receive takes one when its bytes arrive, and the reader
// gives it back once it has read it, by a store to shared memory (no
// system call). The buffers and the ring are mapped outside Go's heap,
// so memory the kernel may still write to is never collected.
type BufRing struct {
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

// NewBufRing registers n (a power of 2) buffers of size bytes as group
// group of r and hands them all to the kernel (Linux 5.19).
func NewBufRing(r *Ring, group uint16, n uint16, size int) (*BufRing, error) {
	mem, err := unix.Mmap(-1, 0, int(n)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap(io_uring buffer ring)", err)
	}
	bufs, err := unix.Mmap(-1, 0, int(n)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, os.NewSyscallError("mmap(io_uring buffers)", err)
	}
	b := &BufRing{mem: mem, bufs: bufs, size: size, mask: n - 1, group: group,
		tailW:   (*uint32)(unsafe.Pointer(&mem[12])),
		entries: unsafe.Slice((*uringBuf)(unsafe.Pointer(&mem[0])), n)}
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: uint32(n), bgid: group}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		b.Unmap()
		return nil, os.NewSyscallError("io_uring_register(PBUF_RING)", e)
	}
	for i := uint16(0); i < n; i++ {
		b.Put(i)
	}
	return b, nil
}

// Buf returns buffer id's first n bytes.
func (b *BufRing) Buf(id uint16, n int) []byte {
	off := int(id) * b.size
	return b.bufs[off : off+n : off+b.size]
}

// Put gives buffer id back to the kernel (one goroutine at a time: the
// token holder, or the set-up).
func (b *BufRing) Put(id uint16) {
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

// Unregister takes the group back from r (its receives are all answered).
func (b *BufRing) Unregister(r *Ring) {
	r.life.RLock()
	defer r.life.RUnlock()
	if r.Closed() {
		return // the ring's end took the group with it (and fd may be another's now)
	}
	reg := uringBufReg{bgid: b.group}
	_, _, _ = unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringUnregisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
}

// Unmap releases the buffers and the ring's entries (unregistered, or
// the ring closed: the kernel writes to them no more).
func (b *BufRing) Unmap() {
	_ = unix.Munmap(b.bufs)
	_ = unix.Munmap(b.mem)
}

// ProbeGroup is the buffer group id ProbeBufRing uses (no link's: mux
// gives each link the group of its id, below it).
const ProbeGroup = 0xffff

// ProbeBufRing reports whether r takes a group of provided buffers of
// size bytes (Linux 5.19), registering one under ProbeGroup and taking it
// back: the one probe, so a kernel without them is refused at set-up
// rather than failing every connection.
func ProbeBufRing(r *Ring, size int) error {
	b, err := NewBufRing(r, ProbeGroup, 1, size)
	if err != nil {
		return err
	}
	b.Unregister(r)
	b.Unmap()
	return nil
}
