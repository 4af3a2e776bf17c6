package checker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redmux/redmux/redlock"
)

// holder is one contending goroutine. For each attempt it draws a plan
// (plan.go), acquires, and plays the plan, recording its claims and
// checking the library's contracts as it goes (checks.go).
type holder struct {
	cfg       *Config
	c         *redlock.Client
	obs       *endCounter // c's observer
	kl        KeyLister   // cfg.Faults', if it reads the nodes (EndCheckRate)
	lives     Lives       // and knows their incarnations
	id        int
	plans     *planner
	h         *hookState // the pause hook's state for the holder's own calls
	kh        *hookState // and for its keep-alive's extensions
	rec       *Recorder
	s         *stats
	resources []string
	note      func(error)
	kind      string // what the next claim follows (Interval.Kind)
	store     *fencedStore
}

// holding is one acquisition.
type holding struct {
	w   *holder
	l   redlock.Lock
	r   string    // the resource; a set's names joined by "+"
	rs  []string  // a multi-resource holding's resources, else nil
	got time.Time // when Acquire returned
	end time.Time // the validity Acquire gave
	id  int64     // the Recorder's holding id
	// pre: the nodes' lives just before Acquire (end checks only): a node
	// whose data set changed while the acquisition ran may hold a copy of
	// another node's key, whose expiry that node's clock set
	pre []string
	// note: which nodes held the key just after Acquire returned (a fake
	// cluster's KeyLister), for a failed run's timelines
	note string
}

// claim records a claim of the holding, on each of its resources.
func (g *holding) claim(from, to time.Time) {
	w := g.w
	if g.rs == nil {
		w.rec.Add(Interval{Resource: g.r, Holder: w.id, Holding: g.id, Start: from, End: to, Kind: w.kind, Note: g.note})
		return
	}
	for _, x := range g.rs {
		w.rec.Add(Interval{Resource: x, Holder: w.id, Holding: g.id, Start: from, End: to, Kind: w.kind})
	}
}

func (w *holder) loop(runCtx context.Context) {
	ctx := context.WithValue(runCtx, holderKey{}, w.h)
	for ctx.Err() == nil && w.s.acquired.Load() < int64(w.cfg.Acquisitions) {
		p := w.plans.next()
		g := w.acquire(ctx, &p)
		if g == nil {
			continue
		}
		if w.cfg.Fencing || w.cfg.ZombieRate > 0 {
			w.writeAll(g, false)
		}
		switch p.fate {
		case fateZombie:
			// keeps the lock to its end, sleeps past it, then writes
			g.claim(g.got, g.end)
			sleepUntil(ctx, g.end.Add(p.pastEnd))
			w.writeAll(g, true)
			w.release(g.l, g.r, p.release)
		case fateKeepAlive:
			w.keepAlive(runCtx, g, &p)
		case fateCrash:
			// A crashed holder: it believes it holds the lock until its
			// validity ends and never releases.
			w.s.crashed.Add(1)
			g.claim(g.got, g.end)
		default:
			w.hold(ctx, g, &p)
		}
	}
}

// acquire makes the plan's Acquire (the holding, or nil when it failed)
// and checks that the lock it returned had validity when the replies
// were in (NoValidity).
func (w *holder) acquire(ctx context.Context, p *plan) *holding {
	cfg, h := w.cfg, w.h
	g := &holding{w: w, r: w.resources[p.res]}
	if p.set != nil {
		for _, i := range p.set {
			g.rs = append(g.rs, w.resources[i])
		}
		g.r = strings.Join(g.rs, "+")
	}
	h.fired = false
	actx, acancel := ctx, context.CancelFunc(func() {})
	if p.acqAfter > 0 {
		if !p.acqCancel {
			actx, acancel = context.WithTimeout(ctx, p.acqAfter)
		} else {
			actx, acancel = context.WithCancel(ctx)
			t := time.AfterFunc(p.acqAfter, acancel)
			stop := acancel
			acancel = func() { t.Stop(); stop() }
		}
	}
	var opts []redlock.LockOption
	if cfg.Fencing {
		opts = append(opts, redlock.WithFencing())
	}
	var (
		l   redlock.Lock
		err error
	)
	if p.endCheck && w.lives != nil {
		g.pre = w.lives.Lives()
	}
	if g.rs != nil {
		l, err = w.c.AcquireMulti(actx, g.rs, opts...)
	} else {
		l, err = w.c.Acquire(actx, g.r, opts...)
	}
	if err != nil && actx != ctx && actx.Err() != nil && ctx.Err() == nil {
		w.s.ctxEnded.Add(1)
	}
	acancel()
	if err != nil {
		if !errors.Is(err, redlock.ErrNotAcquired) {
			w.note(err)
		}
		w.s.notAcq.Add(1)
		return nil
	}
	g.got = time.Now()
	w.s.acquired.Add(1)
	if g.rs != nil {
		w.s.multi.Add(1)
	}
	if cfg.won != nil {
		v := l.ValueArray()
		cfg.won.Store(string(v[:]), true)
	}
	g.l, g.end = l, l.Until()
	if w.kl != nil && g.rs == nil {
		g.note = keyNote(w.kl, g.r, l)
	}
	if h.fired && !g.end.After(h.at) {
		w.rec.Broke(NoValidity, "holder %d: %q valid until %v after the replies were in", w.id, g.r, g.end.Sub(h.at))
	}
	g.id = w.rec.NewHolding()
	w.kind = "acquired"
	return g
}

// hold plays a plain holding: an extension first if planned, then held to
// the end of its validity (with an end check if planned) or for the
// plan's time, then released.
func (w *holder) hold(ctx context.Context, g *holding, p *plan) {
	from, end := g.got, g.end
	if p.extend {
		from, end = w.extend(ctx, g, &p.ext, from, end)
	}
	if p.toEnd {
		w.s.heldToEnd.Add(1)
		if p.endCheck && w.lives != nil && w.kl != nil {
			w.checkEnd(ctx, g.r, g.l, end, g.pre)
		}
		sleepUntil(ctx, end)
	} else {
		sleepUntil(ctx, time.Now().Add(p.hold))
	}
	relAt := time.Now()
	if relAt.Before(end) {
		end = relAt
	}
	g.claim(from, end)
	w.release(g.l, g.r, p.release)
}

// extend runs one extension: late (near the end of validity, full TTL) or
// early to a shorter TTL, sometimes under a short ctx deadline. It records
// the claim before the call (cut where the call began) and returns the
// claim after it.
func (w *holder) extend(ctx context.Context, g *holding, e *extendPlan, from, end time.Time) (time.Time, time.Time) {
	ttl := w.cfg.TTL
	if e.late {
		// with U[0, 3ms) of validity left
		sleepUntil(ctx, end.Add(-e.wait))
	} else {
		// early, to a shorter TTL: the validity drops to it at once (the
		// nodes keep the longer expiry: the script never shortens a key)
		sleepUntil(ctx, time.Now().Add(e.wait))
		ttl = e.ttl
	}
	ectx, cancel := w.callCtx(ctx, e.ctx)
	defer cancel()
	call := time.Now()
	if call.Before(end) {
		g.claim(from, call)
	} else {
		g.claim(from, end)
	}
	w.h.fired = false
	err := g.l.Extend(ectx, ttl)
	ret := time.Now()
	after := g.l.Until()
	start, _ := w.checkExtend(g.r, ttl, end, call, ret, after, err, false)
	return start, after
}

// callCtx makes a call's ctx from base as planned: base itself, base
// under a short deadline, or one that has already ended (cancelled, a
// deadline in the past, or a 1us timeout spun past: its timer may not
// have fired yet).
func (w *holder) callCtx(base context.Context, c callCtx) (context.Context, context.CancelFunc) {
	switch c.ended {
	case live:
		if c.deadline > 0 {
			return context.WithTimeout(base, c.deadline)
		}
		return base, func() {}
	case endedCancel:
		w.s.endedOps.Add(1)
		ctx, cancel := context.WithCancel(base)
		cancel()
		return ctx, cancel
	case endedPast:
		w.s.endedOps.Add(1)
		return context.WithDeadline(base, time.Now().Add(-time.Millisecond))
	}
	w.s.endedOps.Add(1)
	ctx, cancel := context.WithTimeout(base, time.Microsecond)
	for t := time.Now(); time.Since(t) < 2*time.Microsecond; {
	}
	return ctx, cancel
}

// release releases l under the planned ctx. Partial, expired and lost
// releases are expected under faults; replies of the wrong shape never
// are. A release that kept the lock (not confirmed by a quorum) is retried
// a few times, as a service would; the keys expire anyway.
func (w *holder) release(l redlock.Lock, r string, c callCtx) {
	ctx, cancel := w.callCtx(context.WithValue(context.Background(), holderKey{}, w.h), c)
	defer cancel()
	for try := 0; ; try++ {
		err := l.Release(ctx)
		var re *redlock.ReleaseError
		if err == nil || !errors.As(err, &re) || !re.Retained {
			if l.Held() {
				w.rec.Broke(ReleaseContract, "holder %d: release of %q returned %v and the lock is still held", w.id, r, err)
			}
			if err != nil {
				w.checkRelease(r, err)
			}
			return
		}
		w.checkRelease(r, err)
		if !l.Held() {
			w.rec.Broke(ReleaseContract, "holder %d: release of %q said retained but the lock is not held", w.id, r)
			return
		}
		w.s.retained.Add(1)
		if try == 3 {
			return
		}
		time.Sleep(w.cfg.NodeTimeout)
		ctx = context.Background()
	}
}

// sleepUntil sleeps until t or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
