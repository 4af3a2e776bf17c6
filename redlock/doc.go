// Package redlock implements the Redlock distributed lock of the Redis
// documentation on N independent Redis masters, on top of package mux.
//
// # Tour
//
//	c, err := redlock.New([]string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379",
//		"10.0.0.4:6379", "10.0.0.5:6379"}, redlock.WithTTL(30*time.Second))
//	defer c.Close()
//
//	l, err := c.Acquire(ctx, "payments:batch-42")
//	if err != nil { ... } // errors.Is(err, redlock.ErrNotAcquired)
//	defer l.Release(context.WithoutCancel(ctx))
//	for step := range work {
//		if l.Validity() < 10*time.Second {
//			if err := l.Extend(ctx, 30*time.Second); err != nil {
//				return err // ErrLockLost / ErrLockExpired: stop working now
//			}
//		}
//		do(step) // must finish well within l.Validity()
//	}
//
// # The algorithm
//
// An acquisition attempt takes t1 from the monotonic clock, sends
// SET resource value NX PX ttl to all N nodes at once (one batch through
// mux, all written before any reply is read) and returns as soon as the
// outcome is known. The lock is acquired only if at least the quorum
// (default N/2+1) answered OK and the validity ttl - elapsed - drift is
// positive, drift being ttl*0.01 + 2ms by default. Otherwise the value is
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
// # What it guarantees
//
// While Validity is positive, no other client of a correctly configured
// deployment holds the same lock — provided the nodes' clocks advance at a
// rate within the drift allowance, nodes that lose their data stay away for
// longer than the largest TTL before rejoining, and the holder's process is
// not paused past the validity (GC, swapping, SIGSTOP). Redlock has no
// fencing token: a holder that was paused can still act after its lock
// expired, so a resource that must never see two writers needs its own
// check. docs/REDLOCK.md spells this out, with the options that trade
// safety for availability.
//
// # Allocation
//
// Acquire, Release and Extend allocate nothing in steady state: Lock is a
// small handle value whose shared state the Client recycles at Release,
// options per call are values, commands are encoded into pooled buffers
// and replies parsed in place. Errors allocate.
//
// # Copies of a Lock
//
// Every copy of a Lock refers to the same lock: an Extend through one copy
// moves every copy's Validity, and once one copy is released every copy
// reports zero Validity and ErrNotHeld, also after the Client reused the
// released state for another lock (each handle carries a generation
// number). A Lock is safe for concurrent use.
package redlock
