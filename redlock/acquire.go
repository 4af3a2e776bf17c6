package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redmux/redmux/internal/lockcmd"
	"github.com/redmux/redmux/internal/lockrule"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock/internal/hook"
	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// Acquire takes the lock named resource. It makes up to WithTries attempts
// (default 32), waiting a random delay from the WithRetryDelay range between
// them, and stops early when ctx is done. On failure the error is a
// *NotAcquiredError (errors.Is(err, ErrNotAcquired)).
//
// One attempt is the Redlock acquisition: note t1 on the monotonic clock;
// send SET resource value NX PX ttl to all N nodes at once, waiting at most
// the node timeout; the lock is acquired only if at least the quorum
// answered OK and validity = ttl - elapsed - drift is positive (and at least
// WithMinValidity). Otherwise the value is released on all N nodes, those
// that failed or timed out included, before the next attempt. Every attempt
// uses a fresh value, so a delayed command of a failed attempt can never
// touch a later attempt's lock.
//
// Acquire does not retry when an attempt found more than N-quorum nodes
// down (not connected: connection refused, dial or set-up failed) or
// refusing authentication: it fails at once with ErrUnreachable and the
// nodes' causes (WithFailFast(false) retries instead). Contention (nodes
// holding another value) and timeouts are retried.
//
// opts override the client's defaults for this call. The returned Lock is a
// handle: copies of it refer to the same lock (see Lock).
func (c *Client) Acquire(ctx context.Context, resource string, opts ...LockOption) (Lock, error) {
	return c.acquire(ctx, resource, nil, false, opts)
}

// TryAcquire is Acquire with exactly one attempt and no waiting.
func (c *Client) TryAcquire(ctx context.Context, resource string, opts ...LockOption) (Lock, error) {
	return c.acquire(ctx, resource, nil, true, opts)
}

// AcquireMulti takes every resource of resources as one lock, all or
// nothing: each attempt runs one script per node that sets every key (to
// the attempt's value, with the TTL) if none of them exists, else sets
// nothing, and the lock is acquired when a quorum of nodes set them all,
// with the validity of a single lock (the same rules, retries and
// options as Acquire). It conflicts with any lock, single or multi, on any
// of its resources. Extend, Release, KeepAlive and Validity work on the
// whole set; Resource returns the first resource, Resources all of them.
//
// resources must be non-empty and free of duplicates and empty names. The
// Lock keeps the slice (it allocates nothing): do not modify it while the
// lock is held. The keys should live on the same Redis instance per node
// (Redis Cluster would need them in one hash slot, as any multi-key
// script does).
func (c *Client) AcquireMulti(ctx context.Context, resources []string, opts ...LockOption) (Lock, error) {
	if err := checkResources(resources); err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, resources[0], resources, false, opts)
}

// TryAcquireMulti is AcquireMulti with exactly one attempt and no waiting.
func (c *Client) TryAcquireMulti(ctx context.Context, resources []string, opts ...LockOption) (Lock, error) {
	if err := checkResources(resources); err != nil {
		return Lock{}, err
	}
	return c.acquire(ctx, resources[0], resources, true, opts)
}

func checkResources(rs []string) error {
	if len(rs) == 0 {
		return fmt.Errorf("%w: no resources", ErrBadOption)
	}
	for i, r := range rs {
		if r == "" {
			return fmt.Errorf("%w: empty resource name", ErrBadOption)
		}
		if err := reservedName(r); err != nil {
			return err
		}
		for _, o := range rs[:i] {
			if o == r {
				return fmt.Errorf("%w: resource %q twice", ErrBadOption, r)
			}
		}
	}
	return nil
}

// reservedName refuses a resource whose key is a fencing counter's (its
// name ends with lockcmd.FenceSuffix): locking it would collide with the
// counter of the resource before the suffix (issue 34, R4); or a
// data-set marker's (scripts.MarkerPrefix).
func reservedName(r string) error {
	if strings.HasSuffix(r, lockcmd.FenceSuffix) {
		return fmt.Errorf("%w: resource %q: names ending in %q are the fencing counters' keys", ErrBadOption, r, lockcmd.FenceSuffix)
	}
	if strings.HasPrefix(r, scripts.MarkerPrefix) {
		return fmt.Errorf("%w: resource %q: names beginning with %q are the data-set markers' keys (docs/OPERATIONS.md, rule 4)", ErrBadOption, r, scripts.MarkerPrefix)
	}
	return nil
}

// clusterLayout refuses a lock whose keys a Redis Cluster node cannot
// serve in one script: a multi-resource lock's keys, and a fenced lock's
// key and counter (resource + ":fence"), must share a hash slot, which a
// hash tag gives ("{order:1}:a" and "{order:1}:b"; "{job}" and its
// counter "{job}:fence"). docs/OPERATIONS.md, Redis Cluster nodes.
func (c *Client) clusterLayout(resource string, keys []string, fencing bool) error {
	slot := mux.KeySlot(resource)
	for _, k := range keys {
		if mux.KeySlot(k) != slot {
			return fmt.Errorf("%w: resources %q and %q are in different hash slots (%d, %d) and node %d (%s) is a Redis Cluster: give every resource of a lock one hash tag, as {order:1}:a and {order:1}:b",
				ErrBadOption, resource, k, slot, mux.KeySlot(k), c.cluster, c.addrs[c.cluster])
		}
	}
	if fencing && mux.KeySlot(resource+lockcmd.FenceSuffix) != slot {
		return fmt.Errorf("%w: resource %q and its fencing counter %q are in different hash slots and node %d (%s) is a Redis Cluster: put the name in a hash tag, as {%s}",
			ErrBadOption, resource, resource+lockcmd.FenceSuffix, c.cluster, c.addrs[c.cluster], resource)
	}
	return nil
}

// lockName is how errors name a lock: its resource, or its resources
// joined with "+" (errors only: it allocates).
func lockName(resource string, keys []string) string {
	if len(keys) > 1 {
		return strings.Join(keys, "+")
	}
	return resource
}

// tally counts the node answers of one attempt.
type tally struct {
	granted, refused, failed, pending int
	quarantined                       int // granted by quarantined nodes: counted in failed
	tooShort                          bool
	unreachable                       bool // more than n-quorum nodes down or refusing authentication
	recorded                          bool // w.nodes holds this attempt's per-node answers
	fencingUnknown, fenceFailed       bool // WithFencing: granted, but no token
}

func (c *Client) acquire(ctx context.Context, resource string, keys []string, once bool, opts []LockOption) (Lock, error) {
	s := c.def
	if len(opts) > 0 {
		for _, o := range opts {
			o.apply(&s)
		}
		if err := s.validate(); err != nil {
			return Lock{}, err
		}
	}
	if resource == "" {
		return Lock{}, fmt.Errorf("%w: empty resource name", ErrBadOption)
	}
	if keys == nil {
		if err := reservedName(resource); err != nil {
			return Lock{}, err
		}
	}
	if c.cluster >= 0 {
		if err := c.clusterLayout(resource, keys, s.fencing); err != nil {
			return Lock{}, err
		}
	}
	tries := s.tries
	if once {
		tries = 1
	}
	w := c.getWorker()
	defer c.putWorker(w)
	var (
		l         Lock
		t         tally
		err       error
		try       int
		t0        int64
		contended bool // for the observer
	)
	if c.obs != nil {
		t0 = mono()
	}
	for try = 1; ; try++ {
		if c.closed.Load() {
			err = ErrClosed
			try-- // this attempt was not made
			break
		}
		if err = ctx.Err(); err != nil {
			try-- // this attempt was not made
			break
		}
		t, err = c.attempt(ctx, w, resource, keys, &s, &l)
		contended = contended || t.refused > 0
		//mutant:fence-failed-not-retried
		if err != nil || l.st != nil || (t.unreachable && !s.noFailFast) {
			break // acquired, or no point retrying (a fenced grant without its token is retried)
		}
		if try >= tries {
			break
		}
		d, ok := s.retryDelay(w, try)
		if !ok {
			break // the retry function says stop
		}
		if err = w.sleep(ctx, d); err != nil {
			break
		}
	}
	if err == nil && l.st != nil {
		if c.obs != nil {
			// the lock is returned whatever the observer does (emit
			// recovers its panic)
			c.emit(Event{Op: OpAcquire, Resource: resource, LockID: l.id, Duration: time.Duration(mono() - t0), Attempts: try, Contended: contended, Node: -1})
		}
		return l, nil
	}
	e := &NotAcquiredError{
		Resource: lockName(resource, keys), Tries: try,
		Granted: t.granted, Refused: t.refused, Failed: t.failed, Pending: t.pending, Quarantined: t.quarantined,
		TooShort: t.tooShort, Unreachable: t.unreachable,
		FencingUnknown: t.fencingUnknown, FenceFailed: t.fenceFailed,
		Err: closedErr(err),
	}
	if t.recorded {
		e.Nodes = make([]NodeResult, c.n)
		for i, r := range w.nodes {
			e.Nodes[i] = NodeResult{Node: i, Addr: c.addrs[i], Status: r.status, Err: r.err}
		}
	}
	if c.obs != nil {
		c.emit(Event{Op: OpAcquire, Resource: resource, Duration: time.Duration(mono() - t0), Err: e, Attempts: try, Contended: contended, Node: -1})
	}
	return Lock{}, e
}

// attempt is one Redlock acquisition. On success it fills *l.
func (c *Client) attempt(ctx context.Context, w *worker, resource string, keys []string, s *lockSettings, l *Lock) (tally, error) {
	if err := c.newValue(w); err != nil {
		return tally{failed: c.n}, err
	}
	ttl := s.ttl
	drift := s.drift(ttl)
	timeout := s.nodeTimeout
	if lim := ttl - drift; timeout > lim {
		timeout = lim // waiting longer could only end with no validity
	}
	c.trust.noteTTL(ttl)
	if !c.declare(ctx, w, ttl, timeout) {
		// the TTL is not recorded on a quorum (rule 5): no grant may use it
		return c.declareFailed(w), nil
	}
	c.sync(nil) // judge new incarnations before anything is sent (docs/OPERATIONS.md)
	b := w.b
	b.Reset()
	b.SetKey(resource) // one connection per node for this resource: a release never overtakes its SET
	// SET NX answers +OK or nil; a grant counts on a trusted node whose
	// marker, read right after it, is the accepted one (rules 2 and 4)
	granted, expect := w.grantSet, mux.ExpectSimple|mux.ExpectNil
	pol := mux.Policy{Quorum: c.quorum, Timeout: timeout}
	switch {
	case s.fencing:
		// the granted quorum's counters are what the token needs
		// (docs/FENCING.md); later answers are not awaited. Each node's
		// command carries the run_id this client knows for it, so its
		// counters are judged against its incarnation (stale ones vouch
		// for nothing): a grant counts only from a node whose counters
		// are not stale and whose incarnation is still the one named.
		w.guess = c.fenceGuess(ctx)
		c.addFenced(w, resource, keys, ttl)
		granted = w.fencedOK // addFenced set each node's expected reply
	case keys == nil:
		w.cmd = lockcmd.AppendSetNXPX(w.cmd[:0], resource, w.val[:], ttlMillis(ttl))
	default:
		w.cmd = lockcmd.AppendEvalSHAKeysInt(w.cmd[:0], scripts.AcquireMulti.SHA, keys, w.val[:], ttlMillis(ttl))
		granted, expect = w.grantMulti, mux.ExpectInt
	}
	// a reply of another kind means the connection is out of step: mux
	// breaks it rather than hand the reply to this attempt
	if !s.fencing {
		b.BroadcastExpect(w.cmd, expect)
	}
	// the replicas' acknowledgement (wait.go), then the data set's
	// marker, read after the lock command on the same connection (rule 4)
	c.prepWait(w, b, timeout)
	c.prepMarkers(w, b, resource)
	c.prepHistory(w, b) // INFO replication on nodes without the flush watch (rule 4)

	w.steady, w.want = 0, c.wantRecord()
	t1 := mono() // step 1: before the first byte is sent
	pol.SuccessAll = granted
	out, err := c.m.Do(ctx, b, pol)
	hook.At(ctx, hook.AcquireReplied) // the safety checker's client pause; nil outside it
	t2 := mono()
	if w.histBad != 0 {
		c.judgeHistories(w, b)
	}
	if c.noteMarkers(w, b, -1) {
		// off the grant's path: once this attempt is decided
		defer c.markerWork(ctx, w, resource, s.nodeTimeout)
	}
	if c.obs != nil {
		c.observeNodes(nil, b, OpAcquire, resource, 0)
	}
	if err != nil {
		// Do did not run (ctx done before start, client closed mid-way or
		// a bug): release whatever may have been written, then report.
		t := c.record(w, out, keys != nil)
		c.releaseQuick(ctx, w, resource, keys, s.nodeTimeout)
		c.migrateCounters(ctx, w, resource, s.nodeTimeout)
		return t, err
	}
	//mutant:no-drift,validity-from-end,validity-plus-1ms
	end := t1 + int64(ttl-drift) // validity = end - t2 = ttl - elapsed - drift
	//mutant:pending-granted
	if lockrule.Acquired(out.Successes, c.quorum, time.Duration(end-t2), s.minValidity) {
		var token uint64
		if s.fencing {
			var t tally
			token, t = c.fence(ctx, w, resource, keys, s, end, out.Successes)
			if token == 0 {
				c.releaseQuick(ctx, w, resource, keys, s.nodeTimeout)
				return t, nil
			}
		}
		st := c.states.Get().(*lockState)
		st.mu.Lock()
		st.end, st.start, st.ttl, st.ext, st.retained = end, t1, ttl, 0, false
		st.incGen = c.trust.gen.Load() // restores look for changes after this
		gen := st.gen
		st.mu.Unlock()
		w.ids++
		*l = Lock{
			st:          st,
			gen:         gen,
			id:          w.ids,
			resource:    resource,
			keys:        keys,
			value:       w.val,
			driftFactor: s.driftFactor,
			driftFixed:  s.driftFixed + s.moveDrift,
			nodeTimeout: s.nodeTimeout,
			maxExt:      s.maxExt,
			token:       token,
			strictRel:   s.strictRel,
		}
		//mutant:pending-granted
		return tally{granted: out.Successes}, nil
	}
	t := c.record(w, out, keys != nil)
	//mutant:no-release-on-failure
	t.tooShort = out.Successes >= c.quorum
	c.releaseQuick(ctx, w, resource, keys, s.nodeTimeout)
	c.migrateCounters(ctx, w, resource, s.nodeTimeout)
	return t, nil
}

// migrateCounters converts, on the nodes of w.migrate, the resource's
// counter of the string form (redmux before issue 47), which the attempt's
// three commands met as WRONGTYPE, into a sorted set with the same number
// (scripts.FenceMigrate), so that the next attempt reads it. Such a node
// counted as failed. Only single locks run the commands, so only their
// counters come here (the scripts convert theirs themselves). It runs
// under the clean-up context and waits at most timeout.
func (c *Client) migrateCounters(ctx context.Context, w *worker, resource string, timeout time.Duration) {
	m := w.migrate
	w.migrate = 0
	if m == 0 {
		return
	}
	b := w.b
	b.Reset()
	b.SetKey(resource)
	w.cmd = lockcmd.AppendEvalSHACounters(w.cmd[:0], scripts.FenceMigrate.SHA, resource, nil)
	for i := 0; i < c.n; i++ {
		if m&(1<<i) != 0 {
			b.AddExpect(i, w.cmd, mux.ExpectInt)
		}
	}
	_, _ = c.m.Do(w.cleanup(ctx), b, mux.Policy{Timeout: timeout})
	w.dctx.parent = nil
}

// record reads a failed attempt's per-node answers from w.b into w.nodes
// and counts them. Only failures come here: the errors it keeps may
// allocate (a server error's text).
func (c *Client) record(w *worker, out mux.Outcome, multi bool) tally {
	t := tally{granted: out.Successes, pending: out.Pending, recorded: true}
	down := 0
	for i := 0; i < c.n; i++ {
		r, err := w.b.Reply(i, w.lockN[i]-1)
		mr, merr := w.b.Reply(i, w.layout(i))
		acked, aerr := true, error(nil)
		if w.waitN[i] > 0 {
			var wr resp.Reply
			wr, aerr = w.b.Reply(i, w.lockN[i])
			v, ok := wr.Int()
			acked = aerr == nil && ok && v >= int64(w.waitN[i])
		}
		rec := nodeRec{}
		staleGrant := false
		if w.lockN[i] == pipeCmds { // a fenced single lock: its SET is the grant
			r, err = w.b.Reply(i, pipeSet)
			a, have, ok := w.answer(i)
			switch {
			case have && ok:
				staleGrant = a.granted && !w.current(c, i, a)
				if a.migrate {
					w.migrate |= 1 << i
				}
			case have && err == nil:
				err = errFencedForm
			case err == nil:
				// the SET answered; the ZADD or the read did not come, or
				// answered an error (mux failed the node): the node's error
				for k := 0; k < pipeCmds && err == nil; k++ {
					_, err = w.b.Reply(i, k)
				}
			}
		} else if a, ok := fencedReply(r, w.guess); err == nil && ok {
			r = intReply(0) // the grant, as the multi script answers it
			if a.granted {
				r = intReply(1)
			}
			multi = true
			staleGrant = a.granted && !w.current(c, i, a)
			if a.migrate {
				w.migrate |= 1 << i
			}
		}
		v, isInt := r.Int()
		grant := err == nil && (r.IsOK() || multi && isInt && v == 1)
		switch {
		case staleGrant:
			// a fenced grant that did not count: its counters vouch for
			// nothing (another incarnation's, or not counters, or the
			// node's incarnation unknown)
			rec.status, rec.err = NodeFailed, errStaleCounter
			if w.tags[i] == "" {
				rec.err = errFencingIncUnknown
			}
			t.fencingUnknown = true
		case grant && (errors.Is(aerr, mux.ErrTimeout) || errors.Is(aerr, mux.ErrPending)):
			rec.status, rec.err = NodePending, aerr // the replicas' acknowledgement had not come
		case grant && aerr != nil:
			rec.status, rec.err = NodeFailed, closedErr(aerr)
		case grant && !acked:
			rec.status, rec.err = NodeFailed, errNotReplicated
		case grant && (errors.Is(merr, mux.ErrTimeout) || errors.Is(merr, mux.ErrPending)):
			rec.status, rec.err = NodePending, merr // the marker's answer had not come
		case grant && merr != nil:
			rec.status, rec.err = NodeFailed, closedErr(merr)
		case grant && !c.trusted(i):
			// a grant that did not count: the node is quarantined
			rec.status, rec.err = NodeFailed, c.quarantineErr(i)
			if rec.err == nil {
				rec.err = &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrNodeRestarted}
			}
			t.quarantined++
		case grant && !markerOK(w.mstate[i], mr):
			// its data set is new, or not the one this client knows (rule 4)
			rec.status, rec.err = NodeFailed, c.markerErr(i, w.mstate[i])
			t.quarantined++
		case grant && c.shardYoung(w, i):
			// another shard of the cluster node has a young data set
			rec.status, rec.err = NodeFailed, &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrDataSetNew,
				Left: max(time.Duration(c.mk.young[i].Load()-mono()), time.Nanosecond)}
			t.quarantined++
		case grant && c.slotMoved(w, i):
			// the key's slot came from another shard of the cluster node
			rec.status, rec.err = NodeFailed, &QuarantineError{Node: i, Addr: c.addrs[i], Cause: ErrSlotMoved, Left: time.Nanosecond}
			t.quarantined++
		case grant:
			rec.status = NodeGranted
		case err == nil && (r.IsNil() || multi && isInt && v == 0):
			rec.status = NodeRefused
			t.refused++
		case errors.Is(err, mux.ErrTimeout) || errors.Is(err, mux.ErrPending):
			rec.status, rec.err = NodePending, err
		case err == nil:
			rec.status, rec.err = NodeFailed, fmt.Errorf("unexpected reply %s", r.String())
		default:
			rec.status, rec.err = NodeFailed, closedErr(err)
		}
		if rec.status == NodeFailed && unreachable(rec.err) {
			down++
		}
		w.nodes[i] = rec
	}
	t.failed = c.n - t.granted - t.refused - t.pending
	t.unreachable = lockrule.QuorumLost(down, c.quorum, c.n)
	return t
}

// declareFailed is the tally of an attempt whose TTL could not be
// declared on a quorum (declare filled w.nodes): every node failed.
func (c *Client) declareFailed(w *worker) tally {
	down := 0
	for i := 0; i < c.n; i++ {
		if unreachable(w.nodes[i].err) {
			down++
		}
	}
	return tally{failed: c.n, recorded: true, unreachable: lockrule.QuorumLost(down, c.quorum, c.n)}
}

// releaseQuick sends the release of w.val for resource to all N nodes and
// waits only for the first answer (or the timeout): what matters is that
// every reachable node gets the command; answers still owed are skipped by
// mux later. Used after a failed attempt (and to roll back a
// multi-resource attempt). It runs under the clean-up context: it is sent
// even when ctx was cancelled or its deadline passed mid-attempt, and it
// waits at most timeout (the node timeout), whatever ctx says.
func (c *Client) releaseQuick(ctx context.Context, w *worker, resource string, keys []string, timeout time.Duration) {
	b := w.b
	b.Reset()
	b.SetKey(resource)
	w.cmd = appendRelease(w.cmd[:0], resource, keys, w.val[:])
	b.BroadcastExpect(w.cmd, mux.ExpectInt)
	_, _ = c.m.Do(w.cleanup(ctx), b, mux.Policy{Quorum: 1, Timeout: timeout})
	w.dctx.parent = nil
}

// appendRelease appends the release command of a lock: compare-and-delete
// of its key, or of every key of a multi-resource lock.
func appendRelease(dst []byte, resource string, keys []string, value []byte) []byte {
	if keys == nil {
		return lockcmd.AppendEvalSHA(dst, scripts.Release.SHA, resource, value)
	}
	return lockcmd.AppendEvalSHAKeys(dst, scripts.ReleaseMulti.SHA, keys, value)
}

// addFenced adds to w.b the fenced acquisition for every node, each
// carrying the tag of the incarnation this client knows for the node
// (w.incs, w.tags). A single lock on a node that is not a Redis Cluster's
// is three native commands, pipelined in this order on the node's
// connection for the resource (docs/FENCING.md, "Raise first"): ZADD GT
// CH of the guess under the node's tag (XX where the node's counters of
// other incarnations are stale: only this incarnation's member, which a
// write-back created, is raised), raised before the lock's key is set so
// that any later grant's read on the node, which follows its own SET,
// sees it; SET NX PX; ZREVRANGE of the counter's top two, read after both.
// Its commands, but the ZADD, are encoded once. A lock of several
// resources, and any lock on a cluster node (whose redirect of one
// command would run it after the commands behind it), runs the script
// scripts.AcquireFenced.
func (c *Client) addFenced(w *worker, resource string, keys []string, ttl time.Duration) {
	w.cmd = w.cmd[:0]
	w.migrate = 0
	clear(w.ansOK)
	for i := 0; i < c.n; i++ {
		w.incs[i] = c.trust.nodes[i].seen.Load()
		w.tags[i] = c.fenceTag(i, w.incs[i])
	}
	b := w.b
	if keys != nil || c.cluster >= 0 {
		c.addFencedScript(w, resource, keys, ttl)
		return
	}
	// every node runs the three commands: all but the ZADD are the same
	// on each, encoded and checked once
	w.cmd = lockcmd.AppendSetNXPX(w.cmd, resource, w.val[:], ttlMillis(ttl))
	set := len(w.cmd)
	w.cmd = lockcmd.AppendZRevRangeTop(w.cmd, resource)
	read := len(w.cmd)
	for i := 0; i < c.n; i++ {
		w.cmd = appendZAdd(w.cmd[:read], w, i, resource)
		//mutant:fence-raise-after-set
		b.AddExpect(i, w.cmd[read:], mux.ExpectInt)
	}
	//mutant:fence-raise-after-set
	b.BroadcastExpect(w.cmd[:set], mux.ExpectSimple|mux.ExpectNil)
	b.BroadcastExpect(w.cmd[set:read], mux.ExpectAggregate)
}

// addFencedScript is addFenced for a lock of several resources or a client
// with a cluster node: the script on those, the three commands on the
// others.
func (c *Client) addFencedScript(w *worker, resource string, keys []string, ttl time.Duration) {
	if keys == nil {
		w.cmd = lockcmd.AppendSetNXPX(w.cmd, resource, w.val[:], ttlMillis(ttl))
	}
	zrev := len(w.cmd)
	if keys == nil {
		w.cmd = lockcmd.AppendZRevRangeTop(w.cmd, resource)
	}
	head := len(w.cmd)
	w.cmd = lockcmd.AppendEvalSHAFenceGuessHead(w.cmd, scripts.AcquireFenced.SHA, resource, keys, w.val[:], ttlMillis(ttl), int64(w.guess))
	tail := len(w.cmd)
	for i := 0; i < c.n; i++ {
		if keys != nil || c.m.IsCluster(i) {
			w.cmd = resp.AppendBulkString(w.cmd[:tail], w.tags[i])
			w.b.AddExpect(i, w.cmd[head:], mux.ExpectAggregate)
			continue
		}
		w.cmd = appendZAdd(w.cmd[:tail], w, i, resource)
		w.b.AddExpect(i, w.cmd[tail:], mux.ExpectInt)
		w.b.AddExpect(i, w.cmd[:zrev], mux.ExpectSimple|mux.ExpectNil)
		w.b.AddExpect(i, w.cmd[zrev:head], mux.ExpectAggregate)
	}
}

// answer reads node i's answer to the fenced acquisition after Do, as the
// grant's predicate read it where it ran. have is false where it is not
// in hand: a reply missing, or the SET refused with an error (no grant,
// no read); ok false for an answer of another form.
func (w *worker) answer(i int) (a fencedAns, have, ok bool) {
	if w.ansOK[i] {
		return w.ans[i], true, true
	}
	if w.lockN[i] != pipeCmds {
		r, err := w.b.Reply(i, w.lockN[i]-1)
		if err != nil {
			return a, false, false
		}
		a, ok = fencedReply(r, w.guess)
		return a, true, ok
	}
	var rs [pipeCmds]resp.Reply
	for k := range rs {
		// an error reply comes with its error: only a counter of the
		// string form's (WRONGTYPE) is an answer; any other, as a reply
		// not come, leaves the node's answer out, as mux failed the node
		r, err := w.b.Reply(i, k)
		if err != nil && (k == pipeSet || !r.HasErrorPrefix("WRONGTYPE")) {
			return a, false, false
		}
		rs[k] = r
	}
	a, ok = fencedPipe(rs[pipeSet], rs[pipeRead], rs[pipeRaise], w.tags[i], w.guess)
	return a, true, ok
}

// appendZAdd appends node i's ZADD GT CH of the guess under its tag, XX
// where the tag is strict: where the node's counters of other
// incarnations are stale, only this incarnation's member is raised.
func appendZAdd(dst []byte, w *worker, i int, resource string) []byte {
	tag, strict := strings.CutPrefix(w.tags[i], "=")
	//mutant:fence-zadd-no-xx
	return lockcmd.AppendZAddGT(dst, resource, strict, int64(w.guess), tag)
}

// pipeCmds is a fenced single lock's commands per node (addFenced); the
// script's locks have one. pipeRaise, pipeSet, pipeRead: where the ZADD,
// the SET and the ZREVRANGE are among them (raise first, read last).
const pipeCmds = 3

//mutant:fence-raise-after-set
const pipeRaise, pipeSet, pipeRead = 0, 1, 2

// fencedAns is one node's answer to a fenced acquisition.
type fencedAns struct {
	granted bool  // it set the lock's keys
	counter int64 // the counter it read in that step (0: none)
	stale   bool  // the counter vouches for nothing (its tag, or no counter)
	wrote   bool  // the guess is the counter now, written in that step
	migrate bool  // a counter of the string form: FenceMigrate converts it
}

// fencedReply reads node's answer to the fenced acquire script (a lock of
// several resources, or one on a cluster node): {granted, counter, stale},
// which wrote the guess where it granted, read no stale counter and read
// one below it. guess is the proposal. A reply of another form is not ok.
func fencedReply(r resp.Reply, guess uint64) (a fencedAns, ok bool) {
	g, v, stale, ok := fencedScript(r)
	if !ok || g != 0 && g != 1 {
		return a, false
	}
	a = fencedAns{granted: g == 1, counter: v, stale: stale}
	a.wrote = a.granted && !stale && v >= 0 && uint64(v) < guess
	return a, true
}

// fencedScript reads the script's {granted, counter, stale}.
func fencedScript(r resp.Reply) (granted, counter int64, stale, ok bool) {
	if v, ok := fencedRaw(r.Raw); ok {
		return v[0], v[1], v[2] != 0, true
	}
	return fencedIter(r)
}

// fencedPipe reads a node's answers to its three fenced commands: ZADD's
// CH count, 1 where it raised the tag's member to the guess; the SET's
// +OK (granted) or null (refused); ZREVRANGE's top two members and
// scores, read after both. A counter of the string form answers WRONGTYPE
// to the ZADD and the read: stale, to be converted (migrate). Any other
// form is not ok.
func fencedPipe(set, zrev, zadd resp.Reply, tag string, guess uint64) (a fencedAns, ok bool) {
	switch {
	case set.IsOK():
		a.granted = true
	case !set.IsNil():
		return a, false
	}
	var top [2]zpair
	n := 0
	wrongType := false
	if zrev.HasErrorPrefix("WRONGTYPE") {
		wrongType = true
	} else if top, n, ok = zrevTop(zrev); !ok {
		return a, false
	}
	ch, isInt := zadd.Int()
	switch {
	case zadd.HasErrorPrefix("WRONGTYPE"):
		wrongType = true
	case !isInt:
		return a, false
	}
	if wrongType {
		// a counter of the string form: it vouches for nothing, the
		// attempt converts it
		//mutant:fence-wrongtype-unconverted
		return fencedAns{granted: a.granted, stale: true, migrate: true}, true
	}
	return raisedAns(a.granted, top, n, ch, tag, guess), true
}

// zpair is a member of a counter and its score, as ZREVRANGE ...
// WITHSCORES answers them.
type zpair struct{ member, score []byte }

// raisedAns is a node's answer from its three commands' parts
// (docs/FENCING.md, "Raise first"): the grant, the counter's top n (at
// most two) members read after the raise, ZADD's CH count. The counter
// is the top score; it is stale where that is no counter, or where the
// tag is strict and the top member not the tag. The node wrote the guess,
// as the only one to take it there and above everything before, only
// where ZADD raised the tag's member (CH 1), the top is that member at
// exactly the guess, and the second member's score, if any, is a counter
// below it (ties sort by member). An empty counter on a strict node, where
// ZADD XX found no member, wrote nothing.
func raisedAns(granted bool, top [2]zpair, n int, ch int64, tag string, guess uint64) fencedAns {
	a := fencedAns{granted: granted}
	if n == 0 {
		return a // no counter: 0, current; nothing written
	}
	tag, strict := strings.CutPrefix(tag, "=")
	v, isCounter := counterScore(top[0].score)
	a.counter = v
	//mutant:fence-top-tag-unchecked
	a.stale = !isCounter || strict && string(top[0].member) != tag
	below := true
	if n == 2 {
		v2, ok := counterScore(top[1].score)
		//mutant:fence-tie-counted
		below = ok && uint64(v2) < guess
	}
	//mutant:fence-raise-unseen
	a.wrote = ch == 1 && !a.stale && string(top[0].member) == tag && uint64(v) == guess && below
	return a
}

// zrevTop reads ZREVRANGE key:fence 0 1 WITHSCORES's answer: its n (at
// most two) members, highest first. The usual forms are read straight
// from the frame (the grant's predicate reads every node's): "*0", then
// RESP2's flat "*2" or "*4" of members and scores, or RESP3's "*1" or
// "*2" of pairs "*2 $member ,score"; zrevIter reads the others
// (attributes, a longer score). ok is false for an answer of another form.
func zrevTop(x resp.Reply) (top [2]zpair, n int, ok bool) {
	if x.Type != resp.TypeArray || x.Null {
		return top, 0, false
	}
	if x.Len() == 0 {
		return top, 0, true
	}
	if top, n, ok = zrevRaw(x.Raw); ok {
		return top, n, true
	}
	return zrevIter(x)
}

// zrevRaw is zrevTop's direct read of the frame.
func zrevRaw(raw []byte) (top [2]zpair, n int, ok bool) {
	resp3 := true
	q, ok := cutPrefix(raw, "*1\r\n*2\r\n")
	n = 1
	if !ok {
		if q, ok = cutPrefix(raw, "*2\r\n*2\r\n"); ok {
			n = 2
		} else if q, ok = cutPrefix(raw, "*2\r\n"); ok {
			resp3 = false
		} else if q, ok = cutPrefix(raw, "*4\r\n"); ok {
			resp3, n = false, 2
		} else {
			return top, 0, false
		}
	}
	for k := 0; k < n; k++ {
		if k > 0 && resp3 {
			if q, ok = cutPrefix(q, "*2\r\n"); !ok {
				return top, 0, false
			}
		}
		if top[k].member, q, ok = cutBulk(q); !ok {
			return top, 0, false
		}
		if resp3 {
			if len(q) == 0 || q[0] != ',' {
				return top, 0, false
			}
			top[k].score, q, ok = cutLine(q[1:])
		} else {
			top[k].score, q, ok = cutBulk(q)
		}
		if !ok {
			return top, 0, false
		}
	}
	return top, n, len(q) == 0
}

// zrevIter is zrevTop for any form of the answer: RESP2's members and
// scores one after the other, or RESP3's pairs.
func zrevIter(x resp.Reply) (top [2]zpair, n int, ok bool) {
	it := x.Iter()
	var m, sc resp.Reply
	for it.Next(&m) {
		if n == len(top) {
			return top, 0, false
		}
		if m.Type == resp.TypeArray { // RESP3: a pair
			e := m
			pair := e.Iter()
			if e.Len() != 2 || !pair.Next(&m) || !pair.Next(&sc) {
				return top, 0, false
			}
		} else if !it.Next(&sc) {
			return top, 0, false
		}
		if m.Type != resp.TypeBulkString || sc.Type != resp.TypeBulkString && sc.Type != resp.TypeDouble {
			return top, 0, false
		}
		top[n] = zpair{m.Data, sc.Data}
		n++
	}
	return top, n, true
}

// cutPrefix is bytes.CutPrefix for a string prefix.
func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// cutBulk reads a bulk string "$n\r\n<n bytes>\r\n" (n of at most 4
// digits) off the front of b.
func cutBulk(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 || b[0] != '$' {
		return nil, b, false
	}
	n, i := 0, 1
	for ; i < len(b) && i < 5 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == 1 || i+2+n+2 > len(b) || b[i] != '\r' || b[i+1] != '\n' || b[i+2+n] != '\r' || b[i+3+n] != '\n' {
		return nil, b, false
	}
	return b[i+2 : i+2+n], b[i+4+n:], true
}

// cutLine reads a line's text up to its "\r\n" off the front of b.
func cutLine(b []byte) (v, rest []byte, ok bool) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' {
			return b[:i], b[i+2:], b[i+1] == '\n'
		}
	}
	return nil, b, false
}

// counterScore reads a score as a counter: an integer below 2^53, which
// Redis writes as at most 16 plain digits ("%.17g"). Any other text (a
// fraction, an exponent, a sign, inf) is no counter.
func counterScore(d []byte) (int64, bool) {
	if len(d) == 0 || len(d) > 16 {
		return 0, false
	}
	var n int64
	for _, ch := range d {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if n > maxToken {
		return 0, false
	}
	return n, true
}

// fencedRaw reads the script's answer in its usual form, "*3\r\n:g\r\n:c
// \r\n:s\r\n" with numbers of at most 18 digits and no sign, straight from
// the frame (the grant's predicate and the token each read every node's);
// ok is false for any other form, which fencedIter reads.
func fencedRaw(raw []byte) (v [3]int64, ok bool) {
	if len(raw) < 4 || string(raw[:4]) != "*3\r\n" {
		return v, false
	}
	i := 4
	for k := range v {
		if i >= len(raw) || raw[i] != ':' {
			return v, false
		}
		i++
		start := i
		var n int64
		for ; i < len(raw) && i-start < 18 && raw[i] >= '0' && raw[i] <= '9'; i++ {
			n = n*10 + int64(raw[i]-'0')
		}
		if i == start || i+1 >= len(raw) || raw[i] != '\r' || raw[i+1] != '\n' {
			return v, false
		}
		v[k] = n
		i += 2
	}
	return v, i == len(raw)
}

// fencedIter is fencedReply for any form of the answer.
func fencedIter(r resp.Reply) (granted, counter int64, stale, ok bool) {
	it := r.Iter()
	var a resp.Reply
	if !it.Next(&a) {
		return 0, 0, false, false
	}
	if granted, ok = a.Int(); !ok || !it.Next(&a) {
		return 0, 0, false, false
	}
	if counter, ok = a.Int(); !ok || !it.Next(&a) {
		return 0, 0, false, false
	}
	st, ok := a.Int()
	return granted, counter, st != 0, ok
}

// fenceTag is the last argument of node i's fencing scripts: the tag of
// its incarnation p (incTag), which tags the counters it writes (""
// when unknown), with "=" before it when the node's counters written by
// another incarnation are stale: p's history began with a failover (a
// promoted replica's counters may be behind; docs/FENCING.md). That
// holds for every incarnation that writes under the failover's tag: a
// redial to the same process (a new, equal incarnation), or a restart
// that kept the history. The strings are made once per failover.
func (c *Client) fenceTag(i int, p *mux.Incarnation) string {
	if p == nil || !p.Known {
		return ""
	}
	tag := incTag(p)
	//mutant:fence-stale-vouches,fence-strict-lost-on-redial
	if f := c.trust.nodes[i].failover.Load(); f != nil && f.tag[1:] == tag {
		return f.tag
	}
	return tag
}

// incTag is what fencing counters written under incarnation p are tagged
// with: its replication history's id (master_replid), new at every
// promotion, so that a process promoted again (a failback), whose
// counters came back to it through the other primary's replication and
// may be behind what it gave out before, tags anew and finds them stale;
// the run_id, which a process keeps across promotions, where the node
// told no history.
func incTag(p *mux.Incarnation) string {
	//mutant:fence-tag-run-id
	if p.ReplID != "" {
		return p.ReplID
	}
	return p.RunID
}

// intReply is an integer reply (record's view of a fenced grant).
func intReply(v int64) resp.Reply {
	r, _, _ := resp.Parse(resp.AppendInt(nil, v))
	return r
}

// maxToken bounds fencing counters and tokens: the scripts handle them as
// Lua numbers (doubles), exact below 2^53.
const maxToken = 1<<53 - 1

// maxGuess caps a token proposal far below maxToken: a client whose clock
// is centuries ahead proposes at most 2^52 (the clock reads it in the
// year 2112), and 2^52 more tokens stay for the write-backs after it
// (issue 34, R3: a proposal at maxToken ended fencing for every client).
const maxGuess = 1 << 52

// fenceGuess is a fenced attempt's token guess (docs/FENCING.md): the
// wall clock in microseconds, or one more than the highest counter this
// Client has seen, whichever is higher. Only a proposal: a guess that is
// not above every granted node's counter costs the write-back.
func (c *Client) fenceGuess(ctx context.Context) uint64 {
	g := max(uint64(max(time.Now().UnixMicro(), 1)), c.fenceSeen.Load()+1)
	return min(hook.Guess(ctx, g), maxGuess) // the checker's clients with other clocks; g outside it
}

// saw raises c.fenceSeen to v.
func (c *Client) saw(v uint64) {
	for {
		old := c.fenceSeen.Load()
		if v <= old || c.fenceSeen.CompareAndSwap(old, v) {
			return
		}
	}
}

// fence computes a granted fenced attempt's token from w.b's replies
// (docs/FENCING.md). The grant counted only nodes whose counters are not
// stale (written by their current incarnation, docs/OPERATIONS.md): a
// quorum of them. If every one of those read a counter below the guess,
// they wrote the guess in the step that granted the lock, and the guess
// is the token. Otherwise the token is 1 + the highest counter among the
// answers (the quorum of current counters is what the argument needs;
// stale ones and the others can only raise it), and the guarded
// write-back, which also re-seeds stale counters, must reach a quorum
// before the validity ends (at end). A reply that is not the script's
// fails the attempt (ErrFencingUnknown). It returns the token, or 0 and
// the failed attempt's tally.
func (c *Client) fence(ctx context.Context, w *worker, resource string, keys []string, s *lockSettings, end int64, granted int) (uint64, tally) {
	b := w.b
	var top int64
	fast := true
	for i := 0; i < c.n; i++ {
		a, have, ok := w.answer(i)
		if !have {
			continue
		}
		v := a.counter
		if !ok || v < 0 || v >= maxToken {
			return 0, tally{granted: granted, fencingUnknown: true}
		}
		//mutant:fence-token-one-reply
		top = max(top, v)
		current := w.current(c, i, a)
		if a.granted && current && !a.wrote {
			//mutant:fence-guess-unchecked
			fast = false // this granted node did not take the guess
		}
		if a.granted && !current {
			fast = false // the write-back re-seeds its stale counters
		}
	}
	if fast {
		c.saw(w.guess)
		return w.guess, tally{}
	}
	//mutant:fence-no-writeback
	token := top + 1
	c.saw(uint64(token))
	timeout := s.nodeTimeout
	if left := time.Duration(end - mono()); left < timeout {
		timeout = left
	}
	hook.At(ctx, hook.FenceWriteBack) // the safety checker's client pause; nil outside it
	if timeout <= 0 {
		return 0, tally{granted: granted, fenceFailed: true}
	}
	b.Reset()
	b.SetKey(resource)
	for i := 0; i < c.n; i++ { // each node's counters tagged with its run_id
		w.cmd = lockcmd.AppendEvalSHAFence(w.cmd[:0], scripts.FenceWriteBack.SHA, resource, keys, w.val[:], token, w.tags[i])
		b.AddExpect(i, w.cmd, mux.ExpectInt)
	}
	//mutant:fence-refusal-witness
	out, err := c.m.Do(ctx, b, mux.Policy{Quorum: c.quorum, Success: isOne, Timeout: timeout})
	t3 := mono()
	if c.obs != nil {
		c.observeNodes(nil, b, OpAcquire, resource, 0)
	}
	//mutant:fence-late-unguarded
	if err != nil || out.Successes < c.quorum || t3 >= end || time.Duration(end-t3) < s.minValidity {
		return 0, tally{granted: granted, fenceFailed: true}
	}
	return uint64(token), tally{}
}
