package mux

import (
	"context"
	"errors"
)

// The seam between the engine (conn.go, ingest.go, client.go, call.go,
// batch.go: queues, reply matching, decisions) and the bytes. A driver dials
// connections and runs their read side; a link is one connection; on Linux a
// ready set tells the token driver what is ready. One naming scheme:
// driver_*.go, set_*.go, link_*.go, and the kernel below them in
// mux/internal/poll. Two drivers: raw non-blocking sockets read by whoever
// holds a client's reader token (driver_token_linux.go, its look before a call
// in driver_token_enter_linux.go, the readySet in set_linux.go), told what is
// ready by epoll (set_epoll_linux.go, its socket link_raw_linux.go) or an
// io_uring (set_uring_linux.go, its link link_uring_linux.go;
// TransportIOURing), and Go's net.Conn with one reader goroutine per connection
// (driver_net.go, link_net.go: other systems, Linux with -tags redmux_portable,
// and every client with a TLS node). driver_linux.go and driver_other.go pick
// one at New.

// errWouldBlock is a non-blocking link's "nothing to read now".
var errWouldBlock = errors.New("mux: would block")

// link is one connection as the engine sees it. write is called by one
// writer at a time (pconn.writing); read, by the reader side only.
type link interface {
	// write writes p. A non-blocking link may write part of it (n <
	// len(p), nil error) when the socket is full; the engine then asks
	// for wantWrite(true) and resumes in pconn.writable. A blocking link
	// writes all of p or fails.
	write(p []byte) (int, error)
	// read reads into p; a non-blocking link returns errWouldBlock when
	// nothing is there, a blocking one waits.
	read(p []byte) (int, error)
	nonBlocking() bool
	// wantWrite turns the writability notification on or off.
	wantWrite(on bool) error
	// start begins reading cn (registers with the poller, or starts a
	// reader goroutine). Called with cn.mu held.
	start(cn *pconn) error
	// unregister stops notifications; the engine then closes the link.
	unregister()
	// abort makes the reader side see an error soon (shutdown). Safe
	// while another goroutine writes.
	abort()
	// close releases the connection. Never called while write runs.
	close()
}

// driver dials the links of one client and runs their read side.
type driver interface {
	dial(node, shard int) (link, error)
	// closing aborts dials in progress (Close has begun).
	closing()
	// close stops the read side: every connection is failed with
	// ErrClosed and closed, and the driver's goroutines have ended.
	close()
}

// awaiter is a driver that lets a caller read its own replies (the token
// driver, on epoll and on io_uring: a lone caller leads). Do calls enter before it sends and await
// when the call has not settled by the time everything is sent. Without
// it, Do waits on the batch and the driver's reader side wakes it.
type awaiter interface {
	// enter runs before the caller's commands go out; it waits at most
	// until deadline (mono ns) and reports whether it waited.
	enter(deadline int64) bool
	await(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error
	// sent runs once the caller's commands are queued, before await (or
	// before Do returns, settled is then true): a driver whose links
	// queue writes for the kernel hands them over by then.
	sent(settled bool)
	// follow(1) counts a caller that waits for others to read (for queue
	// room) as a follower, so that someone reads; follow(-1) ends it.
	follow(delta int32)
	// handOff leaves the caller's claimed writers to the holder, which
	// writes them when its delivery ends; false: the caller writes them.
	handOff(claims []*pconn) bool
}
