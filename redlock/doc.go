// Package redlock implements the Redlock distributed lock of the Redis
// documentation on N independent Redis masters, on top of package mux.
//
// # Tour
//
//	c, err := redlock.New([]string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379",
//		"10.0.0.4:6379", "10.0.0.5:6379"}, redlock.WithTTL(30*time.Second))
//	// or URLs: "redis://:password@10.0.0.1:6379/0", "rediss://..." (TLS); see mux.Config.Addrs
//	defer c.Close()
//
//	l, err := c.Acquire(ctx, "payments:batch-42")
//	if err != nil { ... } // *NotAcquiredError: errors.Is(err, redlock.ErrNotAcquired),
//	                      // with the per-node causes
//	defer l.Release(ctx) // sent even if ctx has ended (bounded by the node timeout)
//	work, err := l.KeepAlive(ctx, redlock.KeepAliveMaxHold(time.Hour))
//	if err != nil { ... }
//	for step := range steps {
//		if work.Err() != nil {
//			return context.Cause(work) // ErrLockLost, ErrLockExpired, ErrHoldLimit, ...
//		}
//		do(work, step) // bounded steps; check l.Validity() before acting
//	}
//
// Without keep-alive, a holder calls l.Extend itself before l.Validity()
// runs low. AcquireMulti takes several resources all or nothing; Inspect
// asks the nodes who holds a resource and for how long; WithBackoff and
// WithRetryFunc shape the retries.
//
// # The algorithm
//
// An acquisition attempt takes t1 from the monotonic clock, sends
// SET resource value NX PX ttl to all N nodes at once (one batch through
// mux, all written before any reply is read) and returns as soon as the
// outcome is known. The lock is acquired only if at least the quorum
// (default N/2+1) answered OK and the validity ttl - elapsed - drift is
// positive, drift being ttl*0.01 + 2ms by default (1ms more where a node
// is a Redis Cluster: a slot move carries a key's remaining TTL in whole
// milliseconds, docs/OPERATIONS.md). Otherwise the value is
// released on all N nodes, including those that failed or timed out, and
// Acquire retries after a random delay until its tries or ctx run out. Each
// attempt uses a fresh 20-byte random value (ChaCha8 generators seeded from
// crypto/rand, pooled per worker, so there is no system call and no shared
// mutex per lock).
//
// Release runs a compare-and-delete script on all N nodes, Extend a
// compare-and-pexpire script; an extension counts only if the quorum agreed
// before the current validity ended, and a lock can be extended at most
// WithMaxExtensions times. Scripts are sent with EVALSHA; mux loads them on
// every connection and falls back to EVAL on NOSCRIPT.
//
// Time comes only from the monotonic clock. Until is for display.
//
// # Keep-alive
//
// Lock.KeepAlive extends a lock in the background until the holder's
// context ends, the lock is released or a limit (KeepAliveMaxHold,
// WithMaxExtensions) is reached, and cancels the context it returns, with
// the cause, the moment the lock cannot be counted on: an extension found
// it lost, or its validity ended before an extension reached the quorum.
// One scheduler per Client keeps every kept-alive lock in a heap ordered
// on the monotonic clock by its next extension (computed from its validity
// deadline after every extension: no ticker, no drift) or by its deadline;
// extensions due together leave in one write per node, and none
// allocates. An Extend by the holder on a kept-alive lock re-arms the
// keep-alive from the new validity, or cancels its context, before it
// returns.
//
// # Contexts
//
// The releases the algorithm owes (after a failed attempt, and Release)
// are sent whatever the caller's context says, cancelled or past its
// deadline: they run under a clean-up context of the lock's own, bounded
// by the node timeout. A Release that could not reach a quorum keeps the
// lock releasable (ReleaseError.Retained). An Extend cut by its context
// after sending reports ErrExtendUnknown and keeps the validity it had.
//
// # Fencing
//
// WithFencing hands each grant a token (Lock.Token) that increases with
// every grant of the resource (multi-resource locks included), across
// clients, whatever minority of nodes is down: pass it to the protected
// resource, which refuses a lower one, and a holder paused past its
// validity is refused. Usually no extra round trip (the client proposes
// the token and the granting nodes take it); one more when another
// client's proposal was higher. Counters must be persisted
// (docs/FENCING.md).
//
// # Restarts and failovers
//
// mux learns each node's incarnation (run_id, replication id, uptime) when
// it connects, and every acquisition reads the node's data-set marker
// (keys redmux:node:*) right after its lock command: a data set that is
// new, wiped (FLUSHALL, a full resync) or replaced is seen at the grant
// itself, whether or not a connection was set up again; a flush or a full
// resync is also told by the node on each connection, ahead of the
// replies after it (CLIENT TRACKING, RESP3), which sees a data set
// replaced by a copy that keeps its old marker; on a node that refuses
// CLIENT TRACKING, each acquisition reads INFO replication after the
// marker, and a new replication id tells such a resync. A node that
// restarted, failed over, lost its data set, or is first seen with an
// uptime below the quarantine does not count towards a grant until the
// quarantine has passed: the Redis page's delayed restart, enforced by the
// client. The quarantine is the largest TTL any client of the nodes uses,
// which every client declares on the nodes before using it (WithQuarantine
// may only raise it; WithNodesPersistEveryWrite where every node runs
// appendfsync always; WithTrustNodesAtStart for nodes just started;
// Client.Quarantined; OpIncarnation events, with ErrNodeRestarted,
// ErrNodeFailover, ErrDataSetNew, ErrDataSetReplaced, ErrDataSetFlushed
// or ErrIncarnationUnknown: a node that refuses INFO is quarantined at each
// connection set-up, which may be a restart's). On a Redis Cluster node a
// grant on a slot that moved between its shards less than the quarantine
// ago does not count (ErrSlotMoved). Extensions count
// every node that extended the holder's key, quarantined or not, and put a
// lost key back (Client.Restored), so a kept-alive lock lives through
// rolling restarts. On Sentinel nodes a grant or an extension counts only
// once the node's replicas acknowledged it (WAIT; WithReplicaAcks).
// Rules and safety arguments: docs/OPERATIONS.md.
//
// # Observing
//
// WithObserver reports every operation's outcome (acquire with its
// attempts and contention, extend, keep-alive extension, release: duration
// and error) and every node error to an Observer, for metrics and alerts
// on lost locks, without wrapping calls; unset it costs one branch, and an
// observer that allocates nothing keeps the calls allocation-free. The
// keep-alive's events are delivered on a goroutine of the client's own, so
// an observer that blocks delays events, never a lock's extensions (at
// most 4096 wait; the rest are counted by ObserverDropped). The
// interop/observe module (its own go.mod) has Prometheus and OpenTelemetry
// adapters.
//
// # Errors
//
// Acquire's *NotAcquiredError carries the last attempt's per-node results
// (granted, refused, failed with which error: WRONGPASS, NOAUTH,
// connection refused, timeout), reachable with errors.Is/As. An attempt
// that finds more than N-quorum nodes down or refusing authentication ends
// Acquire at once with ErrUnreachable instead of retrying
// (WithFailFast(false) retries). Every message starts with "redlock: "
// once.
//
// # What it guarantees
//
// While Validity is positive, no other client of a correctly configured
// deployment holds the same lock — provided the nodes' clocks advance at a
// rate within the drift allowance, nodes that lose their data stay away for
// longer than the largest TTL before rejoining, and the holder's process is
// not paused past the validity (GC, swapping, SIGSTOP). Without
// WithFencing a holder that was paused can still act after its lock
// expired, so a resource that must never see two writers needs fencing
// tokens or its own check. docs/REDLOCK.md spells this out, with the
// options that trade safety for availability.
//
// # Allocation
//
// Acquire, Release and Extend allocate nothing in steady state: Lock is a
// small handle value whose shared state the Client recycles at Release,
// options per call are values, commands are encoded into pooled buffers
// and replies parsed in place. Errors allocate.
//
// To check it in your own tests, keep the nodes out of the process:
// testing.AllocsPerRun and b.ReportAllocs count every allocation of the
// whole process, so with fakeserver's nodes in the same process
// (fakeserver.StartCluster) an Acquire+Release on 5 nodes shows about 40
// allocations, every one the fake server's. Against real Redis, or with the
// fake nodes in a child process (fakeserver.StartChild, as this package's
// TestZeroAllocs runs them), it shows 0.
//
// # Copies of a Lock
//
// Every copy of a Lock refers to the same lock: an Extend through one copy
// moves every copy's Validity, and once one copy is released every copy
// reports zero Validity and ErrNotHeld, also after the Client reused the
// released state for another lock (each handle carries a generation
// number). A Lock is safe for concurrent use.
package redlock
