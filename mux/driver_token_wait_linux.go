//go:build linux

package mux

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// A follower (a caller whose replies the token holder reads) waits
// without a timer of its own when it can: it registers its deadline in
// the driver's wait registry, and the token holder, which bounds each of
// its waits by the earliest registered deadline, wakes the callers whose
// deadline has passed. A timer per call cost about 4.5% of the client's
// CPU at -c 256 (arming it when the select parks, disarming it on wake:
// results/cost/README.md, issue 35 item 3).
//
// The rules, and why a follower is never left waiting past its deadline:
//
//  1. A holder looks at the registry before every wait and waits no later
//     than the earliest deadline it finds (waitBound). A follower
//     registered before a look is seen by it.
//  2. Before it looks, the holder publishes (bound) when its wait will end
//     at the latest; it may lower that after the look, never raise it
//     without looking again. A follower registers, then reads bound: if its
//     deadline is earlier, the holder may sleep past it, and the follower
//     arms its own timer as before. Otherwise either the holder's look
//     came after the registration (rule 1), or the follower read the bound
//     of that look or a later one, and the holder looks again by then.
//  3. Whenever followers wait and nobody holds the token, the poller is
//     kicked and takes it (release, await): the next holder looks before
//     its first wait.
//
// Deadlines are not monotonic in a registry (per-call Policy.Timeout, ctx
// deadlines), which is why it is a set with a lower bound per shard and
// not a queue: a shard is scanned only when its lower bound has passed,
// about once per Timeout under steady load.

// waitShards spreads the registry's lock over this many shards (a
// batch's shard is fixed at NewBatch).
const waitShards = 8

type waitEntry struct {
	b  *Batch
	at int64 // mono deadline; math.MaxInt64 once woken
}

type waitShard struct {
	mu  sync.Mutex
	e   []waitEntry
	min atomic.Int64 // <= every registered deadline (stale low after removals)
	_   [40]byte     // one shard per cache line
}

type waitReg struct {
	s [waitShards]waitShard
}

func (r *waitReg) init() {
	for i := range r.s {
		r.s[i].min.Store(math.MaxInt64)
	}
}

// add registers b's wait until at.
func (r *waitReg) add(b *Batch, at int64) {
	s := &r.s[b.shard%waitShards]
	s.mu.Lock()
	b.regIdx = len(s.e)
	s.e = append(s.e, waitEntry{b: b, at: at})
	if at < s.min.Load() {
		s.min.Store(at)
	}
	s.mu.Unlock()
}

// remove ends b's registration.
func (r *waitReg) remove(b *Batch) {
	s := &r.s[b.shard%waitShards]
	s.mu.Lock()
	i, last := b.regIdx, len(s.e)-1
	if i != last {
		s.e[i] = s.e[last]
		s.e[i].b.regIdx = i
	}
	s.e[last] = waitEntry{}
	s.e = s.e[:last]
	s.mu.Unlock()
}

// expire wakes the registered callers whose deadline is at or before now
// and returns the earliest deadline of the others (math.MaxInt64: none).
// Only shards whose lower bound has passed are scanned.
func (r *waitReg) expire(now int64) int64 {
	m := int64(math.MaxInt64)
	for i := range r.s {
		s := &r.s[i]
		sm := s.min.Load()
		if sm > now {
			m = min(m, sm)
			continue
		}
		s.mu.Lock()
		sm = math.MaxInt64
		for k := range s.e {
			e := &s.e[k]
			if e.at <= now {
				e.at = math.MaxInt64 // woken once; it leaves the registry when it runs
				select {
				case e.b.wake <- struct{}{}:
				default:
				}
			} else {
				sm = min(sm, e.at)
			}
		}
		s.min.Store(sm)
		s.mu.Unlock()
		m = min(m, sm)
	}
	return m
}

// wakeAll wakes every registered caller (the client is closing: each
// finds it closed and returns ErrClosed unless its call settled).
func (r *waitReg) wakeAll() {
	for i := range r.s {
		s := &r.s[i]
		s.mu.Lock()
		for k := range s.e {
			select {
			case s.e[k].b.wake <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
	}
}

// waitBound publishes that the holder's next wait ends by until, wakes
// the followers whose deadline has passed at now, and returns until
// lowered to the earliest deadline still waiting (token held; rules 1 and
// 2 above).
func (d *tokenDriver) waitBound(now, until int64) int64 {
	d.bound.Store(until)
	if m := d.reg.expire(now); m < until {
		until = m
		d.bound.Store(until)
	}
	return until
}

// followWait waits as a follower until b's call settles, deadline passes, ctx
// ends or the client closes.
func (d *tokenDriver) followWait(ctx context.Context, b *Batch, deadline int64, ctxDeadline bool) error {
	d.reg.add(b, deadline)
	if deadline < d.bound.Load() {
		d.reg.remove(b) // the holder may sleep past it: this call keeps a timer
		d.timed.Add(1)
		err := b.wait(ctx, deadline, ctxDeadline, d.c.done)
		if err == nil && d.c.closed.Load() {
			// Close's wakeAll may have reached b while it was still
			// registered: that wake-up is not a settled call (b.wait
			// would take it for one)
			return ErrClosed
		}
		return err
	}
	defer d.reg.remove(b)
	// Not on the client's done channel: every follower would lock that one
	// channel to park and again when woken. Close wakes the registered
	// (closing, wakeAll) after it set closed, which a follower registered
	// later sees here.
	if d.c.closed.Load() {
		return ErrClosed
	}
	if done := ctx.Done(); done == nil {
		<-b.wake
	} else {
		select {
		case <-b.wake:
		case <-done:
			return ctx.Err()
		}
	}
	// Woken by the reader when the call settled, by a holder when the
	// deadline passed, or by Close (an entry is woken only while
	// registered, and begin drains a wake-up left for an earlier call).
	// Once Close began the call ends with ErrClosed even if it settled
	// meanwhile: Close fails every connection, which settles the calls
	// still waiting too.
	if d.c.closed.Load() {
		return ErrClosed
	}
	if ctxDeadline && !b.isSettled() { // the batch lock only when the error depends on it
		return context.DeadlineExceeded
	}
	return nil
}
