package checker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/hook"
)

// keepAlive holds g under KeepAlive for the plan's time: it works while
// the keep-alive context lives, claiming at each look (every TTL/6) the
// validity Lock.Until then reports; a claim is cut where the next look
// saw another end, where the holder let go (release, or seeing the context
// cancelled). A self-extending holder (KeepAliveExtendRate) also calls
// Extend itself at some looks (shorter or longer TTLs, some under a short
// deadline or an ended ctx), as services do on locks they keep alive. A
// crashing holder stops the keep-alive and keeps its last claim to its
// end, never releasing. The scheduler's extensions run under a context
// carrying w.kh, so the pause hook stalls them too (a pause past the
// validity must end the keep-alive, not extend it); the holder's own under
// w.h.
//
// Contracts: at every look, the keep-alive's end of validity is the
// lock's (KeepAliveStale: read through hook.KeepAliveSynced while no
// extension is in flight); an Extend that returned ErrLockLost or
// ErrLockExpired has cancelled the keep-alive context before returning
// (KeepAliveOutlived). How long the context outlives the validity (the
// timer's goroutine hop) is measured: Result.MaxKeepAliveLag.
func (w *holder) keepAlive(runCtx context.Context, g *holding, p *plan) {
	kctx, stop := context.WithCancel(context.WithValue(runCtx, holderKey{}, w.kh))
	defer stop()
	l, r := &g.l, g.r
	curStart, curEnd := g.got, l.Until()
	hctx, err := l.KeepAlive(kctx, redlock.KeepAliveFraction(p.frac))
	if err != nil {
		// its validity ended already (a pause at the acquisition)
		g.claim(curStart, minTime(curEnd, time.Now()))
		if !errors.Is(err, redlock.ErrLockExpired) && !errors.Is(err, redlock.ErrClosed) {
			w.note(err)
		}
		w.release(*l, r, p.release)
		return
	}
	w.s.keptAlive.Add(1)
	w.obs.started(l.ID())
	var looks *rand.Rand // the self-extending holder's draws at its looks
	if p.selfLooks != 0 {
		looks = rand.New(rand.NewPCG(p.selfLooks, 0))
	}
	deadline := g.got.Add(p.keepFor)
	look := w.cfg.TTL / 6
	letGo := func() {
		g.claim(curStart, minTime(curEnd, time.Now()))
		w.s.kaEnded.Add(1)
		// Ended by itself (lost, expired, a cap) before the Release: it is
		// reported. Not when the holder's own ctx ended it (the run's end):
		// the Release may come before the scheduler sees that ctx, and then
		// Release ends it, unreported by design.
		// (Compared by identity: a cause from the holder's ctx is the
		// sentinel itself; an Extend's error that wraps its own ctx's
		// deadline is the scheduler's, and reported.)
		if c := context.Cause(hctx); c != nil && c != context.Canceled && c != context.DeadlineExceeded {
			w.obs.ended(l.ID(), errors.Is(c, redlock.ErrLockLost) || errors.Is(c, redlock.ErrLockExpired))
		}
		w.release(*l, r, p.release)
	}
	for {
		now := time.Now()
		live := hctx.Err() == nil
		u := l.Until()
		w.lookAt(*l, r, live, now, u)
		if !live {
			// cancelled: lost, expired, limit, or the run ended; the
			// holder stops here
			letGo()
			return
		}
		if !now.Before(deadline) {
			break
		}
		if !u.Equal(curEnd) {
			g.claim(curStart, minTime(curEnd, now))
			curStart, curEnd = now, u
			w.kind = "kept-alive"
		}
		if looks != nil {
			if e, ok := drawSelfExtend(looks, w.cfg); ok {
				var lost bool
				curStart, curEnd, lost = w.selfExtend(hctx, g, &e, curStart, curEnd)
				if lost {
					letGo()
					return
				}
			}
		}
		sleepUntil(hctx, minTime(deadline, time.Now().Add(look)))
	}
	if p.kaCrash {
		stop() // the process died: keep-alive stops, the lock is not released
		w.s.crashed.Add(1)
		if u := l.Until(); u.After(curEnd) { // an extension that ended meanwhile
			g.claim(curStart, curEnd)
			curStart, curEnd = time.Now(), u
			w.kind = "kept-alive-late"
		}
		g.claim(curStart, curEnd)
		return
	}
	relAt := time.Now()
	g.claim(curStart, minTime(curEnd, relAt))
	w.release(*l, r, p.release)
}

// lookAt is a kept-alive holder's look at its lock at now (its keep-alive
// context live, its validity until u): it measures how long the context
// outlived the validity and checks that the keep-alive's end is the
// lock's (KeepAliveStale).
func (w *holder) lookAt(l redlock.Lock, r string, live bool, now, u time.Time) {
	if live && !u.IsZero() && now.After(u) {
		// the context is cancelled by a timer at the deadline: the
		// lag is a goroutine's scheduling delay (measured, not judged:
		// on 2 loaded cores it reaches the scheduler's 10ms slice)
		if lag := now.Sub(u); int64(lag) > w.s.kaLag.Load() {
			w.s.kaLag.Store(int64(lag))
		}
	}
	if kept, synced := hook.KeepAliveSynced(l); kept && !synced {
		w.rec.Broke(KeepAliveStale, "holder %d: %q keep-alive's end differs from the lock's (validity %v)", w.id, r, l.Validity())
	}
}

// selfExtend is a kept-alive holder's own Extend, as planned at a look,
// under hctx (the work's context, as a service would pass it), sometimes
// with a short deadline or an ended ctx. It cuts the claim where the call
// began and returns the claim after it, and whether the holder must stop
// (lost or expired).
func (w *holder) selfExtend(hctx context.Context, g *holding, e *extendPlan, from, end time.Time) (time.Time, time.Time, bool) {
	h, l, r := w.h, &g.l, g.r
	w.s.selfExt.Add(1)
	base := context.WithValue(hctx, holderKey{}, h)
	ectx, cancel := w.callCtx(base, e.ctx)
	defer cancel()
	// The keep-alive may have extended since the last look: read the
	// count first, then the end; a count that moved by more than this
	// call's own extension means the keep-alive ran around the call.
	ext := l.Extensions()
	if u := l.Until(); u.After(end) {
		now := time.Now()
		g.claim(from, minTime(end, now))
		from, end = now, u
		w.kind = "kept-alive-pre-self-extend"
	}
	call := time.Now()
	g.claim(from, minTime(end, call))
	h.fired = false
	err := l.Extend(ectx, e.ttl)
	if (errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrLockExpired)) && hctx.Err() == nil {
		w.rec.Broke(KeepAliveOutlived, "holder %d: %q Extend said %v, the keep-alive context is still live", w.id, r, err)
	}
	ret := time.Now()
	after := l.Until()
	if err == nil {
		ext++
	}
	start, ok := w.checkExtend(r, e.ttl, end, call, ret, after, err, l.Extensions() != ext)
	w.kind = "self-" + w.kind
	return start, after, !ok
}
