package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Keep-alive: one scheduler per Client (a goroutine and a few extension
// workers, started by the first KeepAlive) keeps every kept-alive lock in a
// min-heap ordered by its next event: the extension due time, or the end
// of its validity while no extension is due (capped, or one in flight).
// Times are monotonic nanoseconds and each due time is computed from the
// lock's validity deadline after every extension, so there is no ticker
// to drift. Extensions that fall due together are handed to the workers
// at once; their commands meet in mux's write queues and leave in one
// write per node (mux's write combining). An extension allocates nothing.

// ErrHoldLimit: a kept-alive lock reached its maximum total hold
// (KeepAliveMaxHold) or its WithMaxExtensions limit; the keep-alive context
// was cancelled with it when the last validity ended.
var ErrHoldLimit = errors.New("redlock: maximum hold reached")

// DefaultKeepAliveFraction is when a kept-alive lock is extended: after
// this fraction of its TTL since its last acquisition or extension began.
const DefaultKeepAliveFraction = 0.5

// keepAliveWorkers is how many extensions of one Client may be in flight
// at once.
const keepAliveWorkers = 8

// kaQueue is how many due extensions may wait for a worker.
const kaQueue = 4096

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

// kaState is a lockState's keep-alive record, guarded by the scheduler's
// mutex.
type kaState struct {
	on      bool
	lock    Lock // the handle the scheduler extends (its generation)
	ctx     context.Context
	cancel  context.CancelCauseFunc
	ttl     time.Duration
	frac    float64
	maxHold time.Duration
	due     int64  // next extension; math.MaxInt64 while none is due
	end     int64  // end of validity as last seen
	stopped error  // non-nil: no more extensions (limit); cancel with it at end
	idx     int    // position in the heap, -1 when not in it
	start   int64  // when the lock was acquired (KeepAliveMaxHold counts from it)
	seq     uint64 // which KeepAlive call (a job of an earlier one is stale)
	// inflight: an extension job was handed to a worker and has not
	// reported; an Extend by the holder meanwhile updates the end but
	// leaves the scheduling to the job's report
	inflight bool
}

// next is the time of the state's next event.
func (k *kaState) next() int64 { return min(k.due, k.end) }

type kaJob struct {
	st  *lockState
	l   Lock
	ttl time.Duration
	seq uint64
}

// scheduler is a Client's keep-alive scheduler.
type scheduler struct {
	c      *Client
	once   sync.Once
	mu     sync.Mutex
	heap   []*lockState
	wake   chan struct{}
	jobs   chan kaJob
	done   chan struct{}
	wg     sync.WaitGroup
	closed bool
	seq    uint64 // KeepAlive calls so far

	// ended: OpKeepAliveEnd events recorded under mu (with an observer),
	// reported by report once mu is released; spare: the other buffer.
	ended, spare []Event
}

func (s *scheduler) start() {
	s.once.Do(func() {
		s.wake = make(chan struct{}, 1)
		s.jobs = make(chan kaJob, kaQueue)
		s.done = make(chan struct{})
		s.wg.Add(1 + keepAliveWorkers)
		go s.loop()
		for i := 0; i < keepAliveWorkers; i++ {
			go s.worker()
		}
	})
}

// close stops the scheduler and cancels every keep-alive with ErrClosed.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	started := s.done != nil
	for _, st := range s.heap {
		st.ka.idx = -1
		s.end(st, ErrClosed)
	}
	s.heap = s.heap[:0]
	s.mu.Unlock()
	s.report()
	if started {
		close(s.done)
		s.wg.Wait()
	}
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

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
	k := kaState{ttl: v.ttl, frac: DefaultKeepAliveFraction, idx: -1}
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
	s := &c.ka
	s.start()
	hctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel(ErrClosed)
		return nil, ErrClosed
	}
	if st.ka.on && st.ka.ctx.Err() != nil {
		// the previous keep-alive's ctx ended; the loop has not seen it yet
		if st.ka.idx >= 0 {
			s.del(st.ka.idx)
		}
		s.end(st, context.Cause(st.ka.ctx))
		s.reportSoon()
	}
	if st.ka.on {
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
	k.on, k.lock, k.ctx, k.cancel, k.end, k.start, k.seq = true, l, hctx, cancel, v.end, v.start, s.seq
	st.ka = k
	s.schedule(st, v.ttl)
	s.push(st)
	s.poke()
	return hctx, nil
}

// schedule sets st's next extension from its validity deadline. With
// end = t1 + ttl - drift (t1: when the last extension began), the next is
// due at end - ((1-frac)*ttl - drift) = t1 + frac*ttl, and never later than
// two node timeouts before the end.
func (s *scheduler) schedule(st *lockState, lastTTL time.Duration) {
	k := &st.ka
	l := &k.lock
	margin := time.Duration(float64(lastTTL)*(1-k.frac)) - l.drift(lastTTL)
	if lim := 2 * l.nodeTimeout; margin < lim {
		margin = lim
	}
	k.due = k.end - int64(margin)
	// but not in a tight loop when two node timeouts are most of the TTL
	if began := k.end - int64(lastTTL-l.drift(lastTTL)); k.due < began+int64(k.frac*float64(lastTTL)/2) {
		k.due = began + int64(k.frac*float64(lastTTL)/2)
	}
	if k.stopped != nil {
		k.due = math.MaxInt64
	}
}

// extTTL is the TTL of st's next extension and whether one may be made
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

// finish ends st's keep-alive with cause (s.mu held; st not in the heap).
func (s *scheduler) finish(st *lockState, cause error) {
	k := &st.ka
	if !k.on {
		return
	}
	k.cancel(cause)
	*k = kaState{idx: -1}
}

// end is finish for a keep-alive that ends other than by Release or by an
// extension (extended returns that one's event to its caller): with an
// observer, it records the OpKeepAliveEnd event that report delivers once
// s.mu is released, on a worker (the loop never runs observer code: a slow
// observer must not hold up other locks' extensions and deadlines).
func (s *scheduler) end(st *lockState, cause error) {
	if ev, ok := s.endEvent(st, cause); ok {
		s.ended = append(s.ended, ev)
	}
	s.finish(st, cause)
}

// endEvent is st's OpKeepAliveEnd event (s.mu held), if st is kept alive
// and the client has an observer.
func (s *scheduler) endEvent(st *lockState, cause error) (Event, bool) {
	k := &st.ka
	if !k.on || s.c.obs == nil {
		return Event{}, false
	}
	return Event{Op: OpKeepAliveEnd, Resource: k.lock.resource, LockID: k.lock.id,
		Duration: time.Duration(mono() - k.start), Err: cause, Node: -1}, true
}

// reportSoon has a worker deliver the recorded events (the loop's: it does
// not run observer code itself). With the queue full, a worker reports
// anyway once it finishes the job in hand.
func (s *scheduler) reportSoon() {
	if s.c.obs == nil || len(s.ended) == 0 { // s.mu held
		return
	}
	select {
	case s.jobs <- kaJob{}:
	default:
	}
}

// report delivers the recorded OpKeepAliveEnd events (s.mu not held). The
// two buffers are swapped, so nothing allocates once they have grown.
func (s *scheduler) report() {
	if s.c.obs == nil {
		return
	}
	s.mu.Lock()
	if len(s.ended) == 0 {
		s.mu.Unlock()
		return
	}
	evs := s.ended
	s.ended, s.spare = s.spare[:0], nil
	s.mu.Unlock()
	for _, e := range evs {
		s.c.emit(e)
	}
	clear(evs) // no error kept beyond the call
	s.mu.Lock()
	if s.spare == nil {
		s.spare = evs[:0]
	}
	s.mu.Unlock()
}

// remove ends st's keep-alive (Release), if any.
func (s *scheduler) remove(st *lockState, cause error) {
	s.mu.Lock()
	if st.ka.on {
		if st.ka.idx >= 0 {
			s.del(st.ka.idx)
		}
		s.finish(st, cause)
	}
	s.mu.Unlock()
}

func (s *scheduler) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	for {
		s.mu.Lock()
		now := mono()
		for len(s.heap) > 0 && s.heap[0].ka.next() <= now {
			st := s.heap[0]
			k := &st.ka
			if k.ctx.Err() != nil { // the holder's ctx ended
				s.del(0)
				s.end(st, context.Cause(k.ctx))
				continue
			}
			if k.end <= now {
				s.del(0)
				cause := k.stopped
				if cause == nil {
					cause = wrapOp("keep-alive", k.lock.name(), ErrLockExpired)
				}
				s.end(st, cause)
				continue
			}
			ttl, ok := k.extTTL(now)
			if !ok {
				k.stopped = ErrHoldLimit
				k.due = math.MaxInt64
				s.fix(0)
				continue
			}
			// Hand it to a worker without blocking (the loop must stay
			// free to watch deadlines); with the queue full, try again
			// in a millisecond.
			select {
			case s.jobs <- kaJob{st: st, l: k.lock, ttl: ttl, seq: k.seq}:
				k.due = math.MaxInt64 // in flight; the end is still watched
				k.inflight = true
			default:
				k.due = now + int64(time.Millisecond)
			}
			s.fix(0)
		}
		wait := time.Hour
		if len(s.heap) > 0 {
			wait = time.Duration(s.heap[0].ka.next() - now)
		}
		s.reportSoon()
		s.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-s.wake:
			timer.Stop()
		case <-s.done:
			timer.Stop()
			return
		}
	}
}

func (s *scheduler) worker() {
	defer s.wg.Done()
	for {
		var j kaJob
		select {
		case j = <-s.jobs:
		case <-s.done:
			return
		}
		if j.st == nil { // the loop's: deliver the ends it recorded
			s.report()
			continue
		}
		s.mu.Lock()
		k := &j.st.ka
		live := k.on && k.seq == j.seq
		var ctx context.Context
		if live {
			ctx = k.ctx
		}
		s.mu.Unlock()
		if !live {
			s.report()
			continue
		}
		st := j.st
		var t0 int64
		if s.c.obs != nil {
			t0 = mono()
		}
		w := s.c.getWorker()
		st.op.Lock()
		err := j.l.extend(ctx, w, j.ttl, OpKeepAlive)
		end, ended := s.extended(st, &j.l, j.ttl, err, j.seq)
		st.op.Unlock()
		if s.c.obs != nil {
			// observer code runs with no mutex held and its panics
			// recovered (emit): the worker goes on
			s.c.flush(w)
			s.c.observe(OpKeepAlive, &j.l, t0, err)
			if ended { // right after the extension that ended it
				s.c.emit(end)
			}
		}
		s.c.putWorker(w)
		if s.c.obs != nil {
			s.report()
		}
	}
}

// extended brings st's keep-alive up to date after an extension of l (st.op
// held, so that no other extension or release runs between the call and
// this): one by the scheduler (seq: its KeepAlive call's), or one by the
// holder (seq 0). Keep-alive and Validity never disagree: the keep-alive's
// end is the lock's, its next extension is scheduled from it, and it ends
// at once when the lock is lost or its validity has ended.
//
// It returns the OpKeepAliveEnd event (with an observer) when it ended the
// keep-alive, for the caller to report after the extension's own event.
func (s *scheduler) extended(st *lockState, l *Lock, ttl time.Duration, err error, seq uint64) (end Event, ended bool) {
	manual := seq == 0
	if manual && err != nil && !errors.Is(err, ErrExtendLimit) {
		var ee *ExtendError
		if !errors.As(err, &ee) {
			return Event{}, false // nothing was sent (bad TTL, ctx done, closed): nothing changed
		}
	}
	v := l.view()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &st.ka
	if !k.on || k.idx < 0 || k.lock.gen != l.gen || (!manual && k.seq != seq) {
		return Event{}, false // not kept alive, released, or a later KeepAlive's
	}
	if !manual {
		k.inflight = false
	}
	now := mono()
	switch {
	case !v.held:
		s.del(k.idx)
		end, ended = s.endEvent(st, ErrNotHeld)
		s.finish(st, ErrNotHeld)
		return end, ended
	case err == nil:
		k.end = v.end
		if !manual && ttl < k.ttl {
			k.stopped = ErrHoldLimit // the cap shortened it: the last one
		}
		if !k.inflight {
			s.schedule(st, ttl)
		}
	case errors.Is(err, ErrExtendLimit):
		k.stopped = ErrExtendLimit
		k.due = math.MaxInt64
	case v.end <= now:
		// lost (the validity was cut to the reply time) or expired: now,
		// not at the next timer
		s.del(k.idx)
		cause := lostCause(l, err)
		end, ended = s.endEvent(st, cause)
		s.finish(st, cause)
		return end, ended
	default:
		// failed but validity remains (timeouts, ctx, unknown outcome):
		// retry while it lasts; the end is still watched
		k.end = v.end
		if k.stopped == nil && !k.inflight {
			retry := now + int64(l.nodeTimeout)
			if !manual || retry < k.due {
				k.due = retry
			}
		}
	}
	s.fix(k.idx)
	s.poke()
	return Event{}, false
}

// lostCause is the keep-alive's cause when an extension left no validity:
// err itself when it says lost or expired, else err joined to an expiry.
func lostCause(l *Lock, err error) error {
	if errors.Is(err, ErrLockLost) || errors.Is(err, ErrLockExpired) {
		return err
	}
	return wrapOp("keep-alive", l.name(), fmt.Errorf("%w (last extension: %w)", ErrLockExpired, err))
}

// The heap: a binary min-heap of lock states by ka.next(), each state
// knowing its index.

func (s *scheduler) less(i, j int) bool { return s.heap[i].ka.next() < s.heap[j].ka.next() }

func (s *scheduler) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	h[i].ka.idx = i
	h[j].ka.idx = j
}

func (s *scheduler) push(st *lockState) {
	st.ka.idx = len(s.heap)
	s.heap = append(s.heap, st)
	s.up(st.ka.idx)
}

func (s *scheduler) del(i int) {
	last := len(s.heap) - 1
	st := s.heap[i]
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	st.ka.idx = -1
	if i != last {
		s.fix(i)
	}
}

func (s *scheduler) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *scheduler) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *scheduler) down(i int) bool {
	i0, n := i, len(s.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s.less(r, c) {
			c = r
		}
		if !s.less(c, i) {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > i0
}
