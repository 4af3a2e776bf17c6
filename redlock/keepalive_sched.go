package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Keep-alive: one scheduler per Client (a goroutine and a few extension
// workers, started by the first KeepAlive) keeps every kept-alive lock in a
// min-heap ordered by its next event (kaState.next): the extension due time
// while one is scheduled, else the end of its validity (an extension in flight,
// or draining after a limit). Times are monotonic nanoseconds and each due time
// is computed from the lock's validity deadline after every extension, so there
// is no ticker to drift. Extensions that fall due together are handed to the
// workers at once; their commands meet in mux's write queues and leave in one
// write per node (mux's write combining). An extension allocates nothing.

// keepAliveWorkers is how many extensions of one Client may be in flight
// at once.
const keepAliveWorkers = 8

// kaQueue is how many due extensions may wait for a worker.
const kaQueue = 4096

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

	// out delivers the loop's and the workers' observer events on a
	// goroutine of its own (outbox.go): neither runs observer code
	out outbox
}

// start starts the loop and the workers, once; s.mu is held and the
// scheduler not closed, so close (which reads s.done under s.mu) stops
// whatever start started.
func (s *scheduler) start() {
	s.once.Do(func() {
		s.wake = make(chan struct{}, 1)
		s.jobs = make(chan kaJob, kaQueue)
		s.done = make(chan struct{})
		s.out.start(s.c)
		s.wg.Add(1 + keepAliveWorkers)
		go s.loop()
		for i := 0; i < keepAliveWorkers; i++ {
			go s.worker()
		}
	})
}

// close stops the scheduler and cancels every keep-alive with ErrClosed;
// it returns once the observer has been given every keep-alive event,
// those of the keep-alives it ended included.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	started := s.done != nil
	for _, st := range s.heap {
		s.end(st, ErrClosed)
	}
	s.heap = s.heap[:0]
	s.mu.Unlock()
	if started {
		close(s.done)
		s.wg.Wait()
	}
	s.out.close()
}

func (s *scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// finish ends st's keep-alive with cause (s.mu held; st not in the heap).
func (s *scheduler) finish(st *lockState, cause error) {
	if st.ka.kept() {
		st.ka.becomeIdle(cause)
	}
}

// end is finish for a keep-alive that ends other than by Release or by an
// extension (extended returns that one's event to its caller): with an
// observer, its OpKeepAliveEnd event goes to the outbox (the loop never
// runs observer code: a slow observer must not hold up other locks'
// extensions and deadlines).
func (s *scheduler) end(st *lockState, cause error) {
	if ev, ok := s.endEvent(st, cause); ok {
		s.out.put(ev)
	}
	s.finish(st, cause)
}

// endEvent is st's OpKeepAliveEnd event (s.mu held), if st is kept alive
// and the client has an observer.
func (s *scheduler) endEvent(st *lockState, cause error) (Event, bool) {
	k := &st.ka
	if !k.kept() || s.c.obs == nil {
		return Event{}, false
	}
	return Event{Op: OpKeepAliveEnd, Resource: k.lock.resource, LockID: k.lock.id,
		Duration: time.Duration(mono() - k.start), Err: cause, Node: -1}, true
}

// remove ends st's keep-alive (Release), if any.
func (s *scheduler) remove(st *lockState, cause error) {
	s.mu.Lock()
	if st.ka.kept() {
		s.del(st.ka.idx)
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
				cause := k.cause // the limit that drained it
				if k.phase != kaDraining {
					cause = wrapOp("keep-alive", k.lock.name(), ErrLockExpired)
				}
				//mutant:keepalive-end-unreported
				s.end(st, cause)
				continue
			}
			// before the end, only a scheduled extension falls due
			ttl, ok := k.extTTL(now)
			if !ok {
				k.becomeDraining(ErrHoldLimit)
				s.fix(0)
				continue
			}
			// Hand it to a worker without blocking (the loop must stay
			// free to watch deadlines); with the queue full, try again
			// in a millisecond.
			select {
			case s.jobs <- kaJob{st: st, l: k.lock, ttl: ttl, seq: k.seq}:
				k.becomeExtending() // the end is still watched
			default:
				k.becomeScheduled(now + int64(time.Millisecond))
			}
			s.fix(0)
		}
		wait := time.Hour
		if len(s.heap) > 0 {
			wait = time.Duration(s.heap[0].ka.next() - now)
		}
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
		s.mu.Lock()
		k := &j.st.ka
		live := k.kept() && k.seq == j.seq
		var ctx context.Context
		if live {
			ctx = k.ctx
		}
		s.mu.Unlock()
		if !live {
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
			// to the outbox, in order: the extension's node errors, its
			// own event, the end it caused; never observer code here
			s.out.put(w.pend...)
			clear(w.pend)
			w.pend = w.pend[:0]
			s.out.put(Event{Op: OpKeepAlive, Resource: j.l.resource, LockID: j.l.id,
				Duration: time.Duration(mono() - t0), Err: err, Node: -1})
			//mutant:keepalive-end-twice
			if ended { // right after the extension that ended it
				s.out.put(end)
			}
		}
		s.c.putWorker(w)
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
	if !k.kept() || k.lock.gen != l.gen || (!manual && k.seq != seq) {
		return Event{}, false // not kept alive, released, or a later KeepAlive's
	}
	// the holder's Extend while a job is out: the job's report schedules
	jobOut := manual && k.phase == kaExtending
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
			k.becomeDraining(ErrHoldLimit) // the cap shortened it: the last one
		}
		if !jobOut {
			k.schedule(ttl)
		}
	case errors.Is(err, ErrExtendLimit):
		k.becomeDraining(ErrExtendLimit)
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
		retry := now + int64(l.nodeTimeout)
		switch {
		case !manual && k.phase == kaExtending: // the job's report
			k.becomeScheduled(retry)
		case manual && k.phase == kaScheduled:
			k.becomeScheduled(min(k.due, retry))
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
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
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
