package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Keep-alive's API: KeepAlive and its options. The scheduler that does
// the extending is in keepalive_sched.go; each lock's keep-alive record and
// its phases (idle, scheduled, extending, draining) in keepalive_state.go.

// ErrHoldLimit: a kept-alive lock reached its maximum total hold
// (KeepAliveMaxHold) or its WithMaxExtensions limit; the keep-alive context
// was cancelled with it when the last validity ended.
var ErrHoldLimit = errors.New("redlock: maximum hold reached")

// DefaultKeepAliveFraction is when a kept-alive lock is extended: after
// this fraction of its TTL since its last acquisition or extension began.
const DefaultKeepAliveFraction = 0.5

// KeepAliveOption sets one parameter of KeepAlive. It is a small value.
type KeepAliveOption struct {
	kind uint8
	d    time.Duration
	f    float64
}

const (
	kaTTL = iota + 1
	kaFraction
	kaMaxHold
)

// KeepAliveTTL sets the TTL each extension asks for. Default: the lock's
// TTL when KeepAlive was called.
func KeepAliveTTL(ttl time.Duration) KeepAliveOption { return KeepAliveOption{kind: kaTTL, d: ttl} }

// KeepAliveFraction sets when the lock is extended: once this fraction of
// the TTL has passed since the last acquisition or extension began (the
// remaining validity is then about (1-f) * TTL). Must be in (0, 1);
// default 0.5. A failed extension that leaves validity is retried after
// the node timeout.
func KeepAliveFraction(f float64) KeepAliveOption { return KeepAliveOption{kind: kaFraction, f: f} }

// KeepAliveMaxHold caps the total hold, from the acquisition: no extension
// reaches beyond it (the last one is shortened to end there), and the
// keep-alive context is cancelled with ErrHoldLimit when that last
// validity ends. Default 0: no cap but WithMaxExtensions.
func KeepAliveMaxHold(d time.Duration) KeepAliveOption { return KeepAliveOption{kind: kaMaxHold, d: d} }

// KeepAlive keeps l held until ctx ends, l is released (through any copy),
// or a limit is reached, extending it on the nodes before its validity runs
// low: once KeepAliveFraction (default half) of the TTL has passed since
// the last acquisition or extension began, scheduled on the monotonic
// clock against the validity deadline. It returns a context derived from
// ctx that is cancelled, with a cause (context.Cause), the moment the lock
// can no longer be counted on:
//
//   - an *ExtendError matching ErrLockLost when an extension showed that
//     the quorum no longer holds the value (Validity is then 0);
//   - an error matching ErrLockExpired when the validity ended before an
//     extension reached the quorum (failed extensions that leave validity
//     are retried until then);
//   - ErrHoldLimit (or ErrExtendLimit) when KeepAliveMaxHold (or
//     WithMaxExtensions, which keep-alive extensions count toward) stopped
//     the extensions and the last validity ended;
//   - ErrNotHeld when the lock was released, ErrClosed when the Client was
//     closed, ctx's cause when ctx ended.
//
// Work protected by the lock should run under the returned context. The
// context is cancelled by a timer at the validity deadline, so between the
// deadline and the cancellation there is the scheduling delay of one
// goroutine: work that must never overrun the lock still checks Validity
// (and needs fencing; see docs/REDLOCK.md). When ctx ends keep-alive
// stops; the lock is not released (call Release).
//
// KeepAlive fails with ErrNotHeld for a released lock, ErrLockExpired when
// its validity has already ended, ErrBadOption for bad options or a lock
// already kept alive, ErrClosed after Close. It allocates once per call
// (the context); each extension allocates nothing.
func (l Lock) KeepAlive(ctx context.Context, opts ...KeepAliveOption) (context.Context, error) {
	st := l.st
	if st == nil {
		return nil, ErrNotHeld
	}
	c := st.c
	v := l.view()
	if !v.held {
		return nil, ErrNotHeld
	}
	k := kaState{ttl: v.ttl, frac: DefaultKeepAliveFraction}
	for _, o := range opts {
		switch o.kind {
		case kaTTL:
			k.ttl = o.d
		case kaFraction:
			k.frac = o.f
		case kaMaxHold:
			k.maxHold = o.d
		}
	}
	if d := l.drift(k.ttl); k.ttl < time.Millisecond || k.ttl > maxTTL || d >= k.ttl {
		return nil, fmt.Errorf("%w: keep-alive TTL %v (drift %v)", ErrBadOption, k.ttl, d)
	}
	if math.IsNaN(k.frac) || k.frac <= 0 || k.frac >= 1 {
		return nil, fmt.Errorf("%w: keep-alive fraction %v outside (0, 1)", ErrBadOption, k.frac)
	}
	if k.maxHold < 0 {
		return nil, fmt.Errorf("%w: negative maximum hold %v", ErrBadOption, k.maxHold)
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	//mutant:keepalive-start-after-close
	s := &c.ka
	hctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel(ErrClosed)
		return nil, ErrClosed
	}
	s.start() // under s.mu, not closed: close sees the goroutines it must stop
	if st.ka.kept() && st.ka.ctx.Err() != nil {
		// the previous keep-alive's ctx ended; the loop has not seen it yet
		s.del(st.ka.idx)
		s.end(st, context.Cause(st.ka.ctx))
	}
	if st.ka.kept() {
		cancel(ErrBadOption)
		return nil, fmt.Errorf("%w: lock %q is already kept alive", ErrBadOption, l.name())
	}
	v = l.view() // again, under the scheduler's lock: Release may have run
	if !v.held {
		cancel(ErrNotHeld)
		return nil, ErrNotHeld
	}
	if v.end <= mono() {
		cancel(ErrLockExpired)
		return nil, wrapOp("keep-alive", l.name(), ErrLockExpired)
	}
	s.seq++
	k.lock, k.ctx, k.cancel, k.end, k.start, k.seq = l, hctx, cancel, v.end, v.start, s.seq
	st.ka = k
	st.ka.schedule(v.ttl) // idle -> scheduled
	s.push(st)
	s.poke()
	return hctx, nil
}
