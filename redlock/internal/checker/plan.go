package checker

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// A plan is what one holding will do, drawn before its Acquire from the
// holder's own random stream (Config.Seed and the holder's id): which
// resources, the ctx its Acquire runs under, and what the holder does
// once it holds the lock. The plans are a pure function of the seed and
// the Config's rates; what the run adds (whether an Acquire succeeds, the
// pause hook's stalls, the faults) is not in them. A plan prints as one
// line (String), and Plans lists the plans a holder draws, so that a
// failing seed can be read.
type plan struct {
	res int   // the resource (a single-resource holding)
	set []int // a multi-resource holding's resources (MultiRate), else nil
	// acquire: the Acquire's ctx ends after acqAfter (AcquireCtxRate; 0:
	// the run's ctx), by a deadline or, when acqCancel, by a cancel
	acqAfter  time.Duration
	acqCancel bool

	fate fate
	// zombie: how long past its claimed end it pauses before writing again
	pastEnd time.Duration
	// keep-alive: its fraction, how long the holder keeps the lock, whether
	// it crashes at the end, and the seed of its own Extend calls at the
	// looks (nonzero: it calls Extend itself, KeepAliveExtendRate)
	frac      float64
	keepFor   time.Duration
	kaCrash   bool
	selfLooks uint64
	// hold: an extension first (Config.ExtendRate), then held to the end
	// of validity (with an end check) or for hold, then released
	extend   bool
	ext      extendPlan
	toEnd    bool
	endCheck bool
	hold     time.Duration
	// release: the ctx of the holding's Release
	release callCtx
}

// fate is what a holding does once acquired.
type fate uint8

const (
	fateHold      fate = iota // holds (maybe extending once first), then releases
	fateZombie                // keeps it to its end, pauses past it, writes again, releases
	fateKeepAlive             // Lock.KeepAlive, then releases (or crashes)
	fateCrash                 // claims it to the end of validity, never releases
)

// extendPlan is one Extend by the holder: late (near the end of validity,
// the full TTL) or early, to a shorter TTL.
type extendPlan struct {
	late bool
	wait time.Duration // late: validity left when it is called; early: the wait after the acquisition
	ttl  time.Duration // what it asks for (0: the Config's TTL)
	ctx  callCtx
}

// callCtx is how the ctx of an Extend or a Release is made: live, live
// under a short deadline, or already ended (EndedCtxRate).
type callCtx struct {
	ended    endedKind
	deadline time.Duration // live under this deadline when > 0 (ExtendDeadlineRate)
}

// endedKind is how an ended ctx ended.
type endedKind uint8

const (
	live          endedKind = iota
	endedCancel             // cancelled
	endedPast               // a deadline in the past
	endedSpunPast           // a 1us timeout spun past (its timer may not have fired)
)

// planner draws a holder's plans.
type planner struct {
	cfg  *Config
	rng  *rand.Rand
	nres int
}

func newPlanner(cfg *Config, id int) *planner {
	return &planner{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id)|2<<32)), nres: cfg.Resources}
}

// next draws the next plan.
func (pl *planner) next() plan {
	cfg, rng := pl.cfg, pl.rng
	p := plan{res: rng.IntN(pl.nres)}
	if rng.Float64() < cfg.MultiRate {
		k := 2 + rng.IntN(cfg.MultiMax-1)
		p.set = rng.Perm(pl.nres)[:k]
	}
	if rng.Float64() < cfg.AcquireCtxRate {
		p.acqAfter = 20*time.Microsecond + time.Duration(rng.Int64N(int64(cfg.AcquireDeadlineMax)))
		p.acqCancel = rng.IntN(2) == 1
	}
	switch {
	case rng.Float64() < cfg.ZombieRate:
		p.fate = fateZombie
		p.pastEnd = time.Duration(rng.Int64N(int64(cfg.TTL)))
	case rng.Float64() < cfg.KeepAliveRate:
		p.fate = fateKeepAlive
		p.frac = 0.3 + 0.4*rng.Float64()
		p.kaCrash = rng.Float64() < cfg.CrashRate
		if rng.Float64() < cfg.KeepAliveExtendRate {
			p.selfLooks = rng.Uint64() | 1
		}
		p.keepFor = time.Duration(rng.Int64N(int64(cfg.KeepAliveHold)))
	case rng.Float64() < cfg.CrashRate:
		p.fate = fateCrash
	default:
		p.fate = fateHold
		if rng.Float64() < cfg.ExtendRate {
			p.extend, p.ext = true, drawExtend(rng, cfg)
		}
		if rng.Float64() < cfg.HoldToEnd {
			p.toEnd = true
			p.endCheck = p.set == nil && !p.extend && rng.Float64() < cfg.EndCheckRate
		} else {
			p.hold = time.Duration(rng.Int64N(int64(cfg.MaxHold)))
		}
	}
	p.release = drawCallCtx(rng, cfg, false)
	return p
}

// drawExtend draws an extension: late, with U[0, 3ms) of validity left,
// or early, after U[0, TTL/4], to a shorter TTL U[MinExtendTTL, MinExtendTTL + TTL/2).
func drawExtend(rng *rand.Rand, cfg *Config) extendPlan {
	var e extendPlan
	if rng.IntN(2) == 0 {
		e.late = true
		e.wait = time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
	} else {
		e.wait = time.Duration(rng.Int64N(int64(cfg.TTL/4) + 1))
		e.ttl = cfg.MinExtendTTL + time.Duration(rng.Int64N(int64(cfg.TTL/2)))
	}
	e.ctx = drawCallCtx(rng, cfg, true)
	return e
}

// drawSelfExtend draws, at one look of a self-extending kept-alive holder,
// whether it calls Extend (one look in three) and the call: to a shorter
// TTL U[MinExtendTTL, MinExtendTTL + TTL/2) or a longer one U[TTL, 2 TTL).
func drawSelfExtend(rng *rand.Rand, cfg *Config) (extendPlan, bool) {
	if rng.IntN(3) != 0 {
		return extendPlan{}, false
	}
	e := extendPlan{ttl: cfg.MinExtendTTL + time.Duration(rng.Int64N(int64(cfg.TTL/2)))}
	if rng.IntN(2) == 0 {
		e.ttl = cfg.TTL + time.Duration(rng.Int64N(int64(cfg.TTL)))
	}
	e.ctx = drawCallCtx(rng, cfg, true)
	return e, true
}

// drawCallCtx draws a call's ctx: ended at EndedCtxRate, else (deadlines)
// under a deadline U[20us, 2ms) at ExtendDeadlineRate.
func drawCallCtx(rng *rand.Rand, cfg *Config, deadlines bool) callCtx {
	if rng.Float64() < cfg.EndedCtxRate {
		return callCtx{ended: endedKind(1 + rng.IntN(3))}
	}
	if deadlines && rng.Float64() < cfg.ExtendDeadlineRate {
		return callCtx{deadline: 20*time.Microsecond + time.Duration(rng.Int64N(int64(2*time.Millisecond)))}
	}
	return callCtx{}
}

// Plans returns the first n plans the holder with this id (client
// index * WorkersPerClient + worker index) draws in a run of cfg, one line
// each: what each attempt would do once it holds the lock.
func Plans(cfg Config, id, n int) []string {
	cfg.defaults()
	pl := newPlanner(&cfg, id)
	out := make([]string, n)
	for i := range out {
		p := pl.next()
		out[i] = p.String()
	}
	return out
}

func (p plan) String() string {
	var b strings.Builder
	if p.set == nil {
		fmt.Fprintf(&b, "res %d", p.res)
	} else {
		b.WriteString("res")
		for i, x := range p.set {
			b.WriteString([]string{" ", "+"}[min(i, 1)])
			fmt.Fprint(&b, x)
		}
	}
	if p.acqAfter > 0 {
		how := "deadline"
		if p.acqCancel {
			how = "cancel"
		}
		fmt.Fprintf(&b, ", acquire %s after %v", how, us(p.acqAfter))
	}
	switch p.fate {
	case fateZombie:
		fmt.Fprintf(&b, ", zombie: writes again %v past its end", us(p.pastEnd))
	case fateKeepAlive:
		fmt.Fprintf(&b, ", keep-alive: fraction %.2f for %v", p.frac, us(p.keepFor))
		if p.selfLooks != 0 {
			fmt.Fprintf(&b, ", extends itself (looks %#x)", p.selfLooks)
		}
		if p.kaCrash {
			b.WriteString(", crashes")
		}
	case fateCrash:
		b.WriteString(", crashes: holds to its end, never releases")
	default:
		if p.extend {
			fmt.Fprintf(&b, ", %v", p.ext)
		}
		switch {
		case p.endCheck:
			b.WriteString(", holds to its end with an end check")
		case p.toEnd:
			b.WriteString(", holds to its end")
		default:
			fmt.Fprintf(&b, ", holds %v", us(p.hold))
		}
	}
	if p.fate != fateCrash && !(p.fate == fateKeepAlive && p.kaCrash) {
		fmt.Fprintf(&b, ", releases%v", p.release)
	}
	return b.String()
}

func (e extendPlan) String() string {
	var s string
	switch {
	case e.late:
		s = fmt.Sprintf("extends late (%v left)", us(e.wait))
	case e.wait > 0:
		s = fmt.Sprintf("extends after %v to %v", us(e.wait), us(e.ttl))
	default:
		s = fmt.Sprintf("extends to %v", us(e.ttl))
	}
	return s + e.ctx.String()
}

func (c callCtx) String() string {
	switch c.ended {
	case endedCancel:
		return " (ctx cancelled)"
	case endedPast:
		return " (ctx past its deadline)"
	case endedSpunPast:
		return " (ctx just past a 1us deadline)"
	}
	if c.deadline > 0 {
		return fmt.Sprintf(" (deadline %v)", us(c.deadline))
	}
	return ""
}

// us rounds d to microseconds, for plans.
func us(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
