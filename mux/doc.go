// Package mux is redmux's N-node client: "poor man's multiplexing" to N
// independent Redis masters on raw non-blocking sockets. A call writes
// every node's commands first, then reads the replies as they arrive
// (epoll), so it costs about one round trip to the slowest node the
// decision needs, not the sum of N round trips; and in steady state it
// allocates nothing.
//
// # Tour
//
//	c, err := mux.New(mux.Config{Addrs: addrs, Scripts: scripts})
//	defer c.Close()
//	b := c.NewBatch()                     // reusable; one per goroutine
//	b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", key, val, "NX", "PX", "30000"))
//	out, err := c.Do(ctx, b, mux.Policy{Quorum: c.N()/2 + 1, Success: isOK})
//	r, err := b.Last(i)                   // node i's reply, or its error
//
// A Batch holds, per node, one or more encoded commands (Add, or Broadcast
// for the same command to every node) and, after Do, every node's replies:
// Reply(node, k), Last(node), Err(node). Replies are copied into the batch,
// so they stay valid until the batch is Reset or used again.
//
// Do returns when its Policy is met: every node replied; or, with Quorum >
// 0, as soon as Quorum nodes succeeded (by the Success predicate; nil
// counts any non-error reply) or so many failed that Quorum is out of
// reach (Outcome.Decided); or the deadline passed (Policy.Timeout, default
// Config.Timeout = 50ms, bounded by ctx's deadline). Each node's result is
// its reply or a distinct error: ErrTimeout, ErrPending (the outcome was
// decided before its reply came), ErrNodeDown, ErrConnBroken, ErrProtocol,
// ErrNotSent, or a *ServerError carrying the server's error text. Node-level
// errors are *NodeError values that also unwrap to their cause (ErrAuth, a
// *resp.ProtocolError, a syscall error).
//
// # Lanes and the supervisor
//
// A Client owns Config.Lanes lanes (default 2*GOMAXPROCS): a lane is one
// connection to every node. Do takes a free lane, runs the batch on the
// caller's goroutine (no goroutine per call) and gives the lane back; many
// goroutines may call Do at once, up to Lanes batches in parallel, the
// others wait for a lane; free lanes are reused most-recently-returned
// first. One background goroutine per node, its supervisor, redials that
// node's connections that broke or could not be made, with exponential
// backoff from ReconnectMin to ReconnectMax, jittered to [d/2, d]; a
// partitioned node whose dials hang delays only its own redials. Nothing on a caller's path ever dials: a node whose
// connection is down fails at once with ErrNodeDown (its last dial error
// is the cause; see NodeErr and NodeUp). New fails only on a bad Config.
//
// Every new connection is set up in one pipelined write: AUTH (password,
// or ACL user and password), HELLO 3 (Config.RESP3), SELECT (Config.DB),
// CLIENT SETNAME, and SCRIPT LOAD of every Config.Scripts entry; every reply
// is checked, and a refused AUTH gives an error wrapping ErrAuth (the
// password never appears in errors). When a node answers NOSCRIPT to an
// EVALSHA of a registered script, the same Do resends that command as EVAL
// with the script's text, then SCRIPT LOADs it again.
//
// # Owed replies
//
// A batch that returns before every reply came (decided early, or timed
// out) leaves those replies owed by their connections. Each connection
// counts what it owes, in FIFO order with the time it was sent; the next
// batch on that lane first skips the owed replies, then reads its own.
// RESP3 push frames are skipped and never matched to a command. If an owed
// reply has not arrived within Config.HardTimeout (default 1s), the
// connection is closed (the node then fails with ErrNodeDown, cause
// "owed reply not received within HardTimeout") and redialled in the
// background; other lanes owing replies to the same node close theirs at
// their next use. A command only partly written when the deadline passes
// also closes its connection; a command not written at all is dropped
// (ErrNotSent) and the connection kept.
//
// # Knobs
//
//	Lanes        parallel batches (connections per node); default 2*GOMAXPROCS, at least 2
//	DialTimeout  connect + set-up pipeline; default 1s
//	Timeout      per-batch deadline; default 50ms (Policy.Timeout per call)
//	HardTimeout  how long an owed reply may take before its connection is replaced; default 1s
//	ReconnectMin, ReconnectMax  redial backoff; default 50ms, 2s
//	Parser       reply limits (resp.Parser); zero = resp's defaults
//
// # Linux and the portable fallback
//
// On Linux each lane has its own epoll instance (EPOLL_CLOEXEC) and one
// non-blocking socket per node (TCP_NODELAY, keepalive, non-blocking
// connect bounded by DialTimeout, host names resolved at dial time). Do
// writes each node's bytes straight to its socket; on EAGAIN it keeps the
// rest and waits for EPOLLOUT (never spinning), while reading replies as
// epoll reports them. The caller never blocks its thread in epoll_wait: the
// lane's epoll descriptor is itself registered with the Go netpoller, the
// caller parks there until it is readable or the batch deadline passes,
// and epoll_wait is only called with a zero timeout to collect the ready
// events. (A thread blocked in a raw syscall keeps its scheduler slot until
// the runtime's monitor takes it back, up to 10 ms later: with many callers
// on few cores that became the tail latency.) Close makes an eventfd
// readable that every lane's epoll watches, so calls in flight return
// ErrClosed at once; then it closes every socket and epoll fd, and stops
// the supervisors.
//
// Other systems (and Linux built with -tags redmux_portable) use a
// portable fallback on net.Conn with the same API and semantics, but
// slower: replies are read round-robin with 1ms read slices instead of
// epoll, a very large batch is written by a helper goroutine, and the
// zero-allocation guarantee does not hold.
//
// # Zero allocation
//
// In steady state Do allocates nothing: commands and replies live in
// buffers owned by the batch and the lane, errors are preallocated values,
// and deadlines come from the monotonic clock without timers. Pass
// package-level functions as Policy.Success (a closure may allocate). The
// cold paths (errors, NOSCRIPT fallback, redial) allocate.
package mux
