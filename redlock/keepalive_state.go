package redlock

import (
	"context"
	"time"
)

// kaPhase is where one lock's keep-alive stands. It changes only through
// kaState's become* methods (the scheduler's mutex held).
type kaPhase uint8

const (
	// kaIdle: not kept alive (the zero kaState); not in the scheduler's
	// heap. Every other phase is in it.
	kaIdle kaPhase = iota
	// kaScheduled: the next extension is due at due; the end of validity
	// is watched too (the heap orders it by the earlier of the two).
	kaScheduled
	// kaExtending: an extension job was handed to a worker and has not
	// reported; only the end is watched. An Extend by the holder meanwhile
	// updates the end but leaves the scheduling to the job's report.
	kaExtending
	// kaDraining: no more extensions (a limit: cause); the keep-alive ends
	// with cause when the last validity ends. A job handed out before may
	// still report and move the end.
	kaDraining
)

// kaState is a lockState's keep-alive record, guarded by the scheduler's
// mutex.
type kaState struct {
	phase   kaPhase
	lock    Lock // the handle the scheduler extends (its generation)
	ctx     context.Context
	cancel  context.CancelCauseFunc
	ttl     time.Duration
	frac    float64
	maxHold time.Duration
	due     int64  // kaScheduled: when the next extension is due
	end     int64  // end of validity as last seen
	cause   error  // kaDraining: what the keep-alive ends with at end
	idx     int    // position in the heap (not kaIdle)
	start   int64  // when the lock was acquired (KeepAliveMaxHold counts from it)
	seq     uint64 // which KeepAlive call (a job of an earlier one is stale)
}

// kept reports whether the lock is kept alive.
func (k *kaState) kept() bool { return k.phase != kaIdle }

// becomeScheduled: the next extension is due at due.
func (k *kaState) becomeScheduled(due int64) { k.phase, k.due = kaScheduled, due }

// becomeExtending: an extension job was handed to a worker.
func (k *kaState) becomeExtending() { k.phase = kaExtending }

// becomeDraining: no more extensions; the keep-alive ends with cause when
// the validity does.
func (k *kaState) becomeDraining(cause error) { k.phase, k.cause = kaDraining, cause }

// becomeIdle ends the keep-alive: its context is cancelled with cause and
// the record cleared (the state is out of the heap).
func (k *kaState) becomeIdle(cause error) {
	k.cancel(cause)
	*k = kaState{}
}

// next is the time of the state's next event: the extension due, or the
// end of validity while none is (extending, draining).
func (k *kaState) next() int64 {
	if k.phase == kaScheduled {
		return min(k.due, k.end)
	}
	return k.end
}

// schedule sets the next extension from the validity deadline, unless the
// keep-alive is draining. With end = t1 + ttl - drift (t1: when the last
// extension began), the next is due at end - ((1-frac)*ttl - drift) =
// t1 + frac*ttl, and never later than two node timeouts before the end.
func (k *kaState) schedule(lastTTL time.Duration) {
	if k.phase == kaDraining {
		return
	}
	l := &k.lock
	margin := time.Duration(float64(lastTTL)*(1-k.frac)) - l.drift(lastTTL)
	if lim := 2 * l.nodeTimeout; margin < lim {
		margin = lim
	}
	due := k.end - int64(margin)
	// but not in a tight loop when two node timeouts are most of the TTL
	if began := k.end - int64(lastTTL-l.drift(lastTTL)); due < began+int64(k.frac*float64(lastTTL)/2) {
		due = began + int64(k.frac*float64(lastTTL)/2)
	}
	k.becomeScheduled(due)
}

// extTTL is the TTL of the next extension and whether one may be made
// (the cap leaves room for it).
func (k *kaState) extTTL(now int64) (time.Duration, bool) {
	ttl := k.ttl
	if k.maxHold > 0 {
		left := time.Duration(k.start + int64(k.maxHold) - now)
		if left < ttl {
			ttl = left
		}
		if ttl <= k.lock.drift(ttl)+time.Millisecond || ttl < time.Millisecond {
			return 0, false
		}
	}
	return ttl, true
}
