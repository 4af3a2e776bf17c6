package redlock

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redmux/redmux/internal/lockcmd"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/internal/hook"
	"github.com/redmux/redmux/redlock/scripts"
)

// Lock is a handle to an acquired lock. It is a small value (returning it
// allocates nothing), and every copy of it refers to the same lock: Extend
// on one copy moves the validity every copy reports, and once any copy is
// released every copy reports zero Validity and ErrNotHeld. A Lock is safe
// for concurrent use (Validity while another goroutine extends or
// releases; Extend and Release on one lock are serialised). The zero Lock
// is not held.
//
// The state a Lock refers to is recycled by its Client after Release; a
// generation number in each handle makes a released lock's copies see
// "not held" even once the state serves another lock.
type Lock struct {
	st          *lockState
	gen         uint64 // st.gen while the lock is held; st.gen moves on at Release
	id          uint64 // unique among the Client's acquisitions (ID)
	resource    string
	keys        []string // every resource of a multi-resource lock (AcquireMulti); nil for one
	value       [ValueSize]byte
	driftFactor float64
	driftFixed  time.Duration
	nodeTimeout time.Duration
	maxExt      int
	token       uint64 // fencing token (WithFencing), 0 without
	strictRel   bool   // WithStrictRelease
}

// lockState is the mutable part of a lock, shared by every copy of its
// handle. op serialises the operations that talk to the nodes (Extend,
// Release, the keep-alive scheduler's extensions); mu guards the fields,
// held only for reads and writes of them, never across a network call.
type lockState struct {
	c  *Client
	op sync.Mutex
	mu sync.Mutex
	// guarded by mu
	gen   uint64
	end   int64 // end of validity, monotonic ns since epoch
	start int64 // when the acquisition began (t1)
	ttl   time.Duration
	ext   int
	// retained: a Release reached fewer than the quorum; the lock is
	// releasable, with no validity left
	retained bool
	// guarded by op: c.trust.gen when every node last confirmed the key
	// (restore)
	incGen uint64
	// guarded by c.ka.mu
	ka kaState
}

// view is a consistent reading of a lock's state.
type view struct {
	held     bool
	end      int64
	start    int64
	ttl      time.Duration
	ext      int
	retained bool
}

func (l Lock) view() view {
	st := l.st
	if st == nil {
		return view{}
	}
	st.mu.Lock()
	v := view{held: st.gen == l.gen, end: st.end, start: st.start, ttl: st.ttl, ext: st.ext, retained: st.retained}
	st.mu.Unlock()
	return v
}

// Resource returns the lock's name (the key on every node); the first
// resource of a multi-resource lock.
func (l Lock) Resource() string { return l.resource }

// Resources returns every resource of the lock: the slice given to
// AcquireMulti (do not modify it), or a new one-element slice.
func (l Lock) Resources() []string {
	if l.keys != nil {
		return l.keys
	}
	if l.resource == "" {
		return nil
	}
	return []string{l.resource}
}

// Value returns a copy of the lock's random value.
func (l Lock) Value() []byte {
	v := l.value
	return v[:]
}

// ID returns a number that tells this acquisition apart from every other
// of its Client (never 0; 0 for the zero Lock). Every copy of the handle
// has it, and the observer's events about the lock carry it (Event.LockID),
// so that one lock's acquisition, extensions, keep-alive end and release
// can be told apart from another's of the same resource.
func (l Lock) ID() uint64 { return l.id }

// Token returns the lock's fencing token (WithFencing): a number greater
// than the token of every earlier grant of the resource (of every resource
// of a multi-resource lock). Send it with every
// write to the protected resource, which must refuse a token lower than
// the highest it has seen (docs/FENCING.md). 0 for a lock acquired without
// fencing.
func (l Lock) Token() uint64 { return l.token }

// ValueArray returns the lock's random value without allocating.
func (l Lock) ValueArray() [ValueSize]byte { return l.value }

// Held reports whether the lock has not been released (through any copy).
// A held lock's validity may still have ended: decide with Validity.
func (l Lock) Held() bool { return l.view().held }

// Validity returns how much of the lock's validity remains, from the
// monotonic clock: 0 once it has ended, for a released lock (released
// through any copy) and for the zero Lock. Work protected by the lock must
// finish (or Extend) before it reaches 0.
func (l Lock) Validity() time.Duration {
	v := l.view()
	if !v.held {
		return 0
	}
	d := time.Duration(v.end - mono())
	if d < 0 {
		return 0
	}
	return d
}

// Until returns the instant the validity ends, for display and logging.
// It carries this process's monotonic clock reading, so time.Until(l.Until())
// is also monotonic; decide with Validity. The zero Time for a lock not
// held.
func (l Lock) Until() time.Time {
	v := l.view()
	if !v.held {
		return time.Time{}
	}
	return epoch.Add(time.Duration(v.end))
}

// TTL returns the TTL of the last acquisition or extension.
func (l Lock) TTL() time.Duration { return l.view().ttl }

// Extensions returns how many times the lock has been extended.
func (l Lock) Extensions() int { return l.view().ext }

// String describes the lock for logs: resource, value in hex, validity.
func (l Lock) String() string {
	if !l.Held() {
		return fmt.Sprintf("redlock.Lock{%q not held}", l.name())
	}
	return fmt.Sprintf("redlock.Lock{%q %s valid %v}", l.name(), hex.EncodeToString(l.value[:]), l.Validity())
}

// name is the lock's resource, or its resources joined with "+" (errors
// and logs only: it allocates for a multi-resource lock).
func (l *Lock) name() string { return lockName(l.resource, l.keys) }

func (l *Lock) drift(ttl time.Duration) time.Duration {
	return lockrule.Drift(ttl, l.driftFactor, l.driftFixed)
}

// Extend sets the lock's TTL to ttl on every node that still holds its
// value (compare-and-pexpire on all N at once). It counts only if the quorum
// agreed before the current validity ended; the new validity is then
// ttl - elapsed - drift, measured from the start of this call. It fails with
// ErrExtendLimit after WithMaxExtensions successful extensions, and with an
// *ExtendError that says what is known: ErrLockLost (more than N-quorum
// nodes no longer hold the value; Validity is then 0), ErrLockExpired (the
// validity ended first), or ErrExtendUnknown (the call ended first: ctx
// cancelled or past its deadline, timeouts, failures; the lock is still
// held for what Validity reports). After a failure the validity is what it
// was before the call, or 0 once the lock is known lost; with ctx
// cancelled or past its deadline mid-call the ExtendError carries ctx's
// error. When nothing was sent (ctx ended or the client closed before any
// command went out, or ttl is invalid) the error is not an ExtendError but
// the cause itself, wrapped (errors.Is(err, context.Canceled), ErrClosed,
// ErrBadOption): the lock is as it was. A quorum that agreed after ctx's
// deadline had passed is reported as ErrExtendUnknown, not success: the
// call's time is not known to have been within the caller's bound.
//
// The nodes never shorten a key's TTL (see scripts.Extend): an Extend to a
// shorter ttl gives the shorter validity, while the keys keep their longer
// life until it runs out. This is what keeps a delayed command of an
// earlier, shorter Extend from cutting a later extension's keys short.
//
// The extension applies to every copy of the Lock, and a keep-alive of the
// lock (KeepAlive) follows it at once: its next extension is scheduled
// from the new validity (sooner after a shorter TTL), and its context is
// cancelled with the error when the lock is lost or its validity has
// ended.
func (l Lock) Extend(ctx context.Context, ttl time.Duration) error {
	st := l.st
	if st == nil {
		return ErrNotHeld
	}
	c := st.c
	var t0 int64
	if c.obs != nil {
		t0 = mono()
	}
	w := c.getWorker()
	st.op.Lock()
	//mutant:keepalive-ignores-holder-extend
	err := l.extend(ctx, w, ttl, OpExtend)
	end, ended := c.ka.extended(st, &l, ttl, err, 0)
	st.op.Unlock()
	if c.obs != nil { // no mutex held: observer panics are recovered (emit)
		c.flush(w)
		c.observe(OpExtend, &l, t0, err)
		if ended { // the keep-alive this Extend ended
			c.emit(end)
		}
	}
	c.putWorker(w)
	return err
}

// extend is Extend with st.op held, on the caller's worker w (its observer
// events wait in w.pend for the caller's flush, once st.op is released);
// op names it for the observer (OpExtend or OpKeepAlive).
func (l *Lock) extend(ctx context.Context, w *worker, ttl time.Duration, op Op) error {
	v := l.view()
	if !v.held {
		return ErrNotHeld
	}
	c := l.st.c
	drift := l.drift(ttl)
	if ttl < time.Millisecond || ttl > maxTTL || drift >= ttl {
		return fmt.Errorf("%w: extend TTL %v (drift %v)", ErrBadOption, ttl, drift)
	}
	if v.ext >= l.maxExt {
		return ErrExtendLimit
	}
	if c.closed.Load() {
		return ErrClosed
	}
	end := v.end
	t1 := mono()
	remaining := time.Duration(end - t1)
	//mutant:extend-after-end
	if remaining <= 0 {
		return &ExtendError{Resource: l.name(), Expired: true}
	}
	timeout := l.nodeTimeout
	if timeout > remaining {
		timeout = remaining
	}
	c.trust.noteTTL(ttl)
	if !c.declare(ctx, w, ttl, timeout) {
		// the TTL is not recorded on a quorum (rule 5): the extension is
		// not made, the lock is as it was
		return &ExtendError{Resource: l.name(), Failed: c.n, Err: errNotDeclared, Expired: mono() >= end}
	}
	c.sync(w) // judge new incarnations before anything is sent (docs/OPERATIONS.md)
	b := w.b
	b.Reset()
	b.SetKey(l.resource) // one connection per node for this resource: a release never overtakes its SET
	if l.keys == nil {
		w.cmd = lockcmd.AppendEvalSHAInt(w.cmd[:0], scripts.Extend.SHA, l.resource, l.value[:], ttlMillis(ttl))
	} else {
		w.cmd = lockcmd.AppendEvalSHAKeysInt(w.cmd[:0], scripts.ExtendMulti.SHA, l.keys, l.value[:], ttlMillis(ttl))
	}
	b.BroadcastExpect(w.cmd, mux.ExpectInt)
	c.prepWait(w, b, timeout)     // a new TTL the replicas do not have would not survive a failover
	hook.At(ctx, hook.ExtendSend) // the safety checker's client pause; nil outside it
	// every node that extended the holder's key counts, quarantined or
	// not (docs/OPERATIONS.md, rule 3 A), once its replicas have it
	out, err := c.m.Do(ctx, b, mux.Policy{Quorum: c.quorum, SuccessAll: w.extendOK, Timeout: timeout})
	hook.At(ctx, hook.ExtendReplied) // the safety checker's client pause; nil outside it
	t2 := mono()
	if c.obs != nil {
		c.observeNodes(w, b, op, l.resource, l.id)
	}
	if err != nil && (out == (mux.Outcome{}) || noneSent(b, c.n)) {
		// Nothing was sent (ctx done or client closed before the write,
		// or ctx's deadline passed before any node's command was queued):
		// the lock is as it was.
		return wrapOp("extend", l.name(), closedErr(err))
	}
	if err == nil {
		err = ctxEnded(ctx) // the deadline that bounded the wait was ctx's
	}
	//mutant:extend-from-end
	newEnd := t1 + int64(ttl-drift)
	//mutant:extend-after-end
	if err == nil && out.Successes >= c.quorum && t2 < end && t2 < newEnd {
		l.set(newEnd, ttl, v.ext+1)
		lost := missing(b, c.n)
		gen := c.trust.gen.Load()
		if gen != l.st.incGen {
			// a node restarted or failed over since every node last
			// confirmed the key: a node still pending at the quorum
			// may be one that lost it
			lost |= unconfirmed(b, c.n)
		}
		if lost == 0 || l.restore(ctx, w, lost, ttl, newEnd) {
			l.st.incGen = gen
		}
		return nil
	}
	// Failed, though some nodes may have applied ttl: they never shorten a
	// key (scripts.Extend), so the old end stands, unless the lock is lost.
	e := &ExtendError{Resource: l.name(), Extended: out.Successes, Pending: out.Pending, Err: closedErr(err)}
	for i := 0; i < c.n; i++ {
		if r, err := b.Reply(i, 0); err == nil {
			if v, ok := r.Int(); ok && v == 0 {
				e.Refused++
			}
		}
	}
	e.Failed = c.n - e.Extended - e.Refused - e.Pending
	e.Expired = t2 >= end
	//mutant:restore-unchecked
	e.Lost = e.Refused > c.n-c.quorum
	if e.Lost && t2 < end {
		end = t2 // at most quorum-1 nodes hold the value: lost
	}
	//mutant:failed-extend-lengthens
	l.set(end, v.ttl, v.ext)
	return e
}

// missing returns the nodes (a bit each) that answered an extension with
// 0: the key is not theirs, absent or another value.
func missing(b *mux.Batch, n int) uint64 {
	var m uint64
	for i := 0; i < n; i++ {
		if r, err := b.Reply(i, 0); err == nil {
			if v, ok := r.Int(); ok && v == 0 {
				m |= 1 << i
			}
		}
	}
	return m
}

// unconfirmed returns the nodes (a bit each) that did not answer an
// extension with 1 before it returned.
func unconfirmed(b *mux.Batch, n int) uint64 {
	var m uint64
	for i := 0; i < n; i++ {
		if r, err := b.Reply(i, 0); err != nil || !isOne(i, r) {
			m |= 1 << i
		}
	}
	return m
}

// restore puts the lock's key back, with the new TTL, on the nodes of
// lost, right after an extension succeeded (docs/OPERATIONS.md, rule 3):
// SET NX PX (for several keys the all-or-nothing acquire script), so a
// node where another value sits keeps it. The lock is held on a trusted
// quorum within its validity, so no other holder is valid and the key
// can be missing only because the node lost it (a restart, a failover)
// or never took it. The restored nodes do not count towards the
// extension just made; they count from the next one, once trusted. It
// waits at most the node timeout, bounded by the new validity (st.op
// held, so a Release cannot overtake it; the same connection per node
// keeps the order on the wire too).
//
// It reports whether every node of lost answered (OK, or nil where another
// value or the key already is).
func (l *Lock) restore(ctx context.Context, w *worker, lost uint64, ttl time.Duration, end int64) bool {
	c := l.st.c
	timeout := min(l.nodeTimeout, time.Duration(end-mono()))
	if timeout <= 0 {
		return false
	}
	b := w.b
	b.Reset()
	b.SetKey(l.resource)
	if l.keys == nil {
		w.cmd = restoreCmd(w.cmd[:0], l.resource, l.value[:], ttlMillis(ttl))
	} else {
		w.cmd = lockcmd.AppendEvalSHAKeysInt(w.cmd[:0], scripts.AcquireMulti.SHA, l.keys, l.value[:], ttlMillis(ttl))
	}
	expect := mux.ExpectSimple | mux.ExpectNil
	if l.keys != nil {
		expect = mux.ExpectInt
	}
	for i := 0; i < c.n; i++ {
		if lost&(1<<i) != 0 {
			b.AddExpect(i, w.cmd, expect)
		}
	}
	_, _ = c.m.Do(w.cleanup(ctx), b, mux.Policy{Timeout: timeout})
	w.dctx.parent = nil
	all := true
	for i := 0; i < c.n; i++ {
		if lost&(1<<i) == 0 {
			continue
		}
		r, err := b.Last(i)
		switch {
		case err != nil:
			all = false
		case r.IsOK() || isOne(i, r):
			c.restored.Add(1)
		}
	}
	return all
}

// restoreCmd is the restore of one key: SET NX PX, never over another
// value.
func restoreCmd(dst []byte, key string, value []byte, ttlMillis int64) []byte {
	//mutant:restore-unchecked
	return lockcmd.AppendSetNXPX(dst, key, value, ttlMillis)
}

// set stores a new end, TTL and extension count (st.op held).
func (l *Lock) set(end int64, ttl time.Duration, ext int) {
	st := l.st
	st.mu.Lock()
	if st.gen == l.gen {
		st.end, st.ttl, st.ext = end, ttl, ext
	}
	st.mu.Unlock()
}

// Release deletes the lock on every node that still holds its value
// (compare-and-delete on all N at once) and waits for every node's answer,
// at most the node timeout. The release is sent whatever ctx says: a ctx
// already cancelled or past its deadline neither stops it nor shortens
// the wait (the node timeout is Release's own clean-up deadline; ctx
// gives only its values). Once at least the quorum of nodes confirmed the
// release (answered it) the lock is not held, whatever the answers,
// through every copy of the Lock; otherwise it is retained (below). Its
// keep-alive (if any) stops with ErrNotHeld either way.
//
// Release returns nil once a quorum of nodes deleted the key (the lock is
// free for others), whatever the other nodes answered, unless
// WithStrictRelease(true) asks for every node's confirmation.
//
// Errors: a *ReleaseError (ErrReleasePartial) naming the nodes that did not
// confirm, when fewer than the quorum deleted the key (or with
// WithStrictRelease); if fewer than the quorum confirmed the release (an
// integer answer: the script ran there) -- nodes down, not connected,
// timed out, partitioned, a connection broken -- its Retained is set and
// the lock stays held, with no validity left: Release again once the
// nodes are back (the keys expire after the TTL anyway). A release sent
// but not confirmed may not have reached the node.
// ErrLockExpired if the validity had already ended when Release was called
// (the protected work overran it); ErrLockLost if every node answered but
// fewer than the quorum still held the value although the validity had
// not ended (a node lost its data or its clock ran fast beyond the drift
// allowance); ErrNotHeld for a lock already released; ErrClosed (in a
// *ReleaseError) when the client is closed, after which the lock is not
// held.
func (l Lock) Release(ctx context.Context) error {
	st := l.st
	if st == nil {
		return ErrNotHeld
	}
	c := st.c
	var t0 int64
	if c.obs != nil {
		t0 = mono()
	}
	w := c.getWorker()
	st.op.Lock()
	retired, err := l.release(ctx, w)
	st.op.Unlock()
	if retired {
		c.states.Put(st) // after op is free: the next lock may use it at once
	}
	if c.obs != nil { // no mutex held: observer panics are recovered (emit)
		c.flush(w)
		c.observe(OpRelease, &l, t0, err)
	}
	c.putWorker(w)
	return err
}

// retire marks the lock released for every copy (st.op held).
func (l *Lock) retire(t0 int64) (end int64) {
	st := l.st
	st.mu.Lock()
	end = st.end
	st.gen++
	st.end = t0
	st.mu.Unlock()
	return end
}

// release is Release with st.op held, on the caller's worker w (its node
// errors wait in w.pend for the caller's flush); retired reports that the
// state may be recycled.
func (l *Lock) release(ctx context.Context, w *worker) (bool, error) {
	v := l.view()
	if !v.held {
		return false, ErrNotHeld
	}
	c := l.st.c
	t0 := mono()
	b := w.b
	b.Reset()
	b.SetKey(l.resource)
	w.cmd = appendRelease(w.cmd[:0], l.resource, l.keys, l.value[:])
	b.BroadcastExpect(w.cmd, mux.ExpectInt)
	w.relGot = 0
	_, err := c.m.Do(w.cleanup(ctx), b, mux.Policy{Success: w.releaseOK, Timeout: l.nodeTimeout})
	w.dctx.parent = nil
	t2 := mono()
	if c.obs != nil {
		c.observeNodes(w, b, OpRelease, l.resource, l.id)
	}
	if err != nil {
		// only ErrClosed can end a call under the clean-up context: the
		// lock cannot be released any more
		end := l.retire(t0)
		c.ka.remove(l.st, ErrNotHeld)
		return true, &ReleaseError{Resource: l.name(), Failed: allNodes(c.n), Errs: []error{closedErr(err)}, Expired: t0 >= end}
	}
	expired := t0 >= v.end && !v.retained // a retried Release is not the work overrunning
	var failed, released int
	want := int64(1) // keys deleted by a node that still held the value
	if l.keys != nil {
		want = int64(len(l.keys))
	}
	for i := 0; i < c.n; i++ {
		// the integer releaseOK read where the reply was parsed; none for
		// a node that did not answer, answered an error or anything else
		if w.relGot&(1<<i) == 0 {
			failed++
		} else if w.relV[i] == want {
			released++
		}
	}
	// Confirmed: the nodes that answered the script (an integer: it ran,
	// deleting the key or finding it gone). A release sent but not
	// confirmed may never have reached the node (a request dropped by a
	// partition, a connection broken on the way), so being sent is no
	// release: with fewer than the quorum confirmed, the keys may sit on
	// a quorum for the whole TTL, and the holder must be able to release
	// again (issue 34, R2).
	confirmed := c.n - failed
	retained := confirmed < c.quorum
	if retained {
		// still releasable, no longer valid: the holder let go, and the
		// nodes that ran the release hold the lock no more
		st := l.st
		st.mu.Lock()
		st.end = min(st.end, t0)
		st.retained = true
		st.mu.Unlock()
	} else {
		l.retire(t0)
	}
	c.ka.remove(l.st, ErrNotHeld) // stop its keep-alive, if any: the holder let go
	var rerr *ReleaseError
	if failed > 0 && (released < c.quorum || l.strictRel) {
		re := &ReleaseError{Resource: l.name(), Released: released, Expired: expired, Retained: retained}
		for i := 0; i < c.n; i++ {
			r, err := b.Last(i) // an error reply comes as a *mux.ServerError
			if err == nil {
				if _, ok := r.Int(); ok {
					continue
				}
				err = fmt.Errorf("node %d: unexpected reply %s", i, r.String())
			}
			re.Failed = append(re.Failed, i)
			re.Errs = append(re.Errs, closedErr(err))
		}
		rerr = re
	}
	switch {
	case rerr != nil:
		return !retained, rerr
	case expired:
		return true, wrapOp("release", l.name(), ErrLockExpired)
	case released < c.quorum && t2 < v.end:
		return true, wrapOp("release", l.name(), fmt.Errorf("only %d of %d nodes held the value: %w", released, c.n, ErrLockLost))
	}
	return true, nil
}

// noneSent reports whether no node of b's last call was sent its command.
func noneSent(b *mux.Batch, n int) bool {
	for i := 0; i < n; i++ {
		if _, err := b.Last(i); !errors.Is(err, mux.ErrNotSent) {
			return false
		}
	}
	return true
}

func allNodes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// ctxEnded is ctx.Err(), also when ctx's deadline has passed but its timer
// has not fired yet (mux bounds a call by ctx's deadline on its own clock).
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
