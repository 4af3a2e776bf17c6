package checker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// The checks a holder makes on the calls it plays: Extend, Release, and
// the nodes' keys near the end of a validity.

// checkExtend counts an Extend (called at call, returned at ret, with the
// old claimed end end) and checks its contracts, unless another extension
// (the keep-alive's) ran just before or after it (interleaved); it returns
// where the claim after it starts, and false when the lock is lost or
// expired (the holder must stop).
func (w *holder) checkExtend(r string, ttl time.Duration, end, call, ret, after time.Time, err error, interleaved bool) (time.Time, bool) {
	h := w.h
	if interleaved {
		h.fired = false // another extension moved the end: the bounds below do not apply
	}
	w.kind = "extended"
	if err == nil {
		w.s.extended.Add(1)
		if h.fired && !h.at.Before(end) {
			w.rec.Broke(LateExtension, "holder %d: %q extended although its validity ended %v before the replies were in", w.id, r, h.at.Sub(end))
		}
		// the library's t1 came before the send, so before the hook's
		// reading: the new end is at most hook + ttl - drift
		if bound := h.at.Add(ttl - drift(ttl)); h.fired && after.After(bound) {
			w.rec.Broke(ExtendTooLong, "holder %d: %q extended %v beyond hook + ttl - drift", w.id, r, after.Sub(bound))
		}
		return call, true
	}
	w.kind = "extend-not-sent"
	var ee *redlock.ExtendError
	if errors.As(err, &ee) {
		w.kind = "extend-failed"
		w.s.extFailed.Add(1)
		// the nodes never shorten a key, and the ones that missed the
		// extension keep the old expiry: the old end is the bound
		if !interleaved && after.After(end) {
			w.rec.Broke(FailedExtendTooLong, "holder %d: %q failed extension (%v) left validity %v beyond the old end", w.id, r, err, after.Sub(end))
		}
		return ret, !ee.Lost && !ee.Expired
	} else if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, redlock.ErrExtendLimit) {
		w.note(err)
	}
	return ret, true
}

// checkRelease records a BadReply for every node error of a release that
// is neither an integer reply nor a node-level failure. A Redis Cluster
// node's redirect that mux could not follow (the primary it names down or
// not in the map yet, or a second redirect) is a node-level failure: the
// command did nothing.
func (w *holder) checkRelease(r string, err error) {
	var re *redlock.ReleaseError
	if !errors.As(err, &re) {
		return
	}
	for i, e := range re.Errs {
		var ne *mux.NodeError
		switch {
		case e == nil, errors.Is(e, mux.ErrTimeout), errors.Is(e, mux.ErrPending), errors.Is(e, mux.ErrNotSent),
			errors.As(e, &ne), errors.Is(e, redlock.ErrClosed), errors.Is(e, context.Canceled), errors.Is(e, context.DeadlineExceeded),
			clusterRedirect(e):
		default:
			node := -1
			if i < len(re.Failed) {
				node = re.Failed[i]
			}
			w.rec.Broke(BadReply, "holder %d: release of %q, node %d: %v", w.id, r, node, e)
		}
	}
}

// clusterRedirect reports whether e is a cluster node's MOVED, ASK,
// TRYAGAIN or CLUSTERDOWN reply.
func clusterRedirect(e error) bool {
	var se *mux.ServerError
	if !errors.As(e, &se) {
		return false
	}
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(se.Text, p) {
			return true
		}
	}
	return false
}

// endCheckSpan is how long before its claimed end a holder starts
// reading the nodes (EndCheckRate), every ~50us until the end: a read
// counts when it is over before the end.
const endCheckSpan = 1500 * time.Microsecond

// checkEnd is the end check (EndCheckRate) of the holding of r by l,
// whose claimed validity ends at end: the nodes that hold l's value now
// (up, their incarnation unchanged since pre, the lives read just before
// Acquire, and across the read) must hold it still at every read of the
// last endCheckSpan before end, unless one went down or restarted
// meanwhile. A read counts only when it is over before end and the run's
// ctx had not ended by then (the injector resets the clocks after that).
// A node whose data set changed while the acquisition ran is left out: a
// resync may have brought it another node's copy of the key, its expiry
// set by that node's clock (the lock counts on rule 4 there, not on the
// clocks). A violation says what the node held instead (nothing, or
// another value), which read of the span saw it (the first: the key may
// have gone long before the span), and the TTL the node gave the key at
// the first look: a key set too short and a key taken away differ there.
func (w *holder) checkEnd(ctx context.Context, r string, l redlock.Lock, end time.Time, pre []string) {
	v := l.ValueArray()
	held, ttls, looked := w.heldOn(r, v[:], pre)
	sleepUntil(ctx, end.Add(-endCheckSpan))
	for n := 1; ; n++ {
		before := w.lives.Lives()
		vals, _ := w.kl.KeyValues(r)
		after := w.lives.Lives()
		now := time.Now()
		if ctx.Err() != nil || !now.Before(end) {
			return // over (a read after the end is no evidence), or the faults are being undone
		}
		if n == 1 {
			w.s.endChecks.Add(1)
		}
		for i, life := range held {
			if life != "" && before[i] == life && after[i] == life && string(vals[i]) != string(v[:]) {
				found := "no key"
				if vals[i] != nil {
					found = "another value"
				}
				w.rec.Broke(KeyExpiredEarly, "holder %d: %q key gone from node %d (up, same incarnation) %v before the end of the validity it was given "+
					"(%s; read %d of the end check; at the first look, %v before the end, the node gave it %v to live)",
					w.id, r, i, end.Sub(now), found, n, end.Sub(looked), ttls[i])
				return
			}
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// heldOn returns, per node, its incarnation where it holds value for r
// now (up, the same incarnation as in pre and before and after the read),
// else ""; the TTL each node gave the key, and when the read was over.
func (w *holder) heldOn(r string, value []byte, pre []string) ([]string, []time.Duration, time.Time) {
	before := w.lives.Lives()
	vals, ttls := w.kl.KeyValues(r)
	after := w.lives.Lives()
	at := time.Now()
	out := make([]string, len(vals))
	for i := range vals {
		if before[i] != "" && before[i] == after[i] && i < len(pre) && pre[i] == before[i] && string(vals[i]) == string(value) {
			out[i] = before[i]
		}
	}
	return out, ttls, at
}
