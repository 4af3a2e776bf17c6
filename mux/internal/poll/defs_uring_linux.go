//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package poll

// The kernel's io_uring structures and constants
// (include/uapi/linux/io_uring.h), as laid out on 64-bit little-endian
// Linux; x/sys/unix has the system call numbers.

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringSQOffsets is struct io_sqring_offsets.
type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// uringCQOffsets is struct io_cqring_offsets.
type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringSQE is struct io_uring_sqe (the fields used here named).
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

// uringCQE is struct io_uring_cqe.
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringGeteventsArg is struct io_uring_getevents_arg.
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
