package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// The checker's files, by concern: config.go (Config, Result), plan.go
// (what each holding will do, a pure function of the seed), holder.go,
// keepalive.go and checks.go (doing it, and checking the calls), hook.go
// (the pause and guess hooks), store.go (the fenced store), ends.go (the
// keep-alive end reports), leftovers.go (the availability run), checker.go
// (the claims and their overlaps) and run.go (the wiring).

// Run drives the workload until Acquisitions were recorded or MaxDuration
// passed, then checks the history.
func Run(cfg Config) (Result, error) {
	cfg.defaults()
	defer installHook()()
	clients, obs, err := newClients(&cfg)
	defer closeAll(clients)
	if err != nil {
		return Result{}, err
	}
	rec := NewRecorder()
	store := newStore(cfg.Fencing)
	var s stats
	var firstErr atomic.Pointer[error]
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxDuration)
	defer cancel()
	start := time.Now()

	var bg sync.WaitGroup
	if cfg.Faults != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			cfg.Faults.Inject(ctx, rand.New(rand.NewPCG(cfg.Seed, 0xfa17)))
		}()
	}
	var legacy atomic.Int64
	if cfg.Fencing && cfg.LegacyEvery > 0 {
		bg.Add(1)
		go func() {
			defer bg.Done()
			legacyCounters(ctx, &cfg, rand.New(rand.NewPCG(cfg.Seed, 0x1e9a)), &legacy)
		}()
	}
	var stopped atomic.Bool
	if cfg.StopOnViolation {
		bg.Add(1)
		go func() {
			defer bg.Done()
			watch(ctx, &cfg, rec, func() { stopped.Store(true); cancel() })
		}()
	}

	var wg sync.WaitGroup
	holders := make([]*holder, 0, cfg.Clients*cfg.WorkersPerClient)
	for ci, c := range clients {
		for wi := 0; wi < cfg.WorkersPerClient; wi++ {
			w := newHolder(&cfg, c, obs[ci], ci*cfg.WorkersPerClient+wi)
			w.rec, w.s, w.store = rec, &s, store
			w.note = func(err error) {
				s.other.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			}
			holders = append(holders, w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.loop(ctx)
			}()
		}
	}
	wg.Wait()
	cancel()
	bg.Wait()
	elapsed := time.Since(start)
	// Closed now, not at return: Close ends the keep-alives still on (the
	// crashed holders') and reports them, so every end is counted below.
	closeAll(clients)
	res := Result{Elapsed: elapsed, StoppedByCheck: stopped.Load()}
	res.KeepAliveEnds, res.KeepAliveLost = checkEnds(obs, rec)
	res.Report = rec.Check()
	res.Timelines = timelines(&cfg, res.Report, rec, obs)
	s.into(&res, store, holders)
	res.LegacyCounters = legacy.Load()
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

// newClients makes cfg.Clients clients, each reporting to its own
// counting observer: the keep-alive ends it is told of are checked, per
// lock, against what the holders saw. On an error it returns the clients
// made so far.
func newClients(cfg *Config) ([]*redlock.Client, []*endCounter, error) {
	clients := make([]*redlock.Client, 0, cfg.Clients)
	obs := make([]*endCounter, cfg.Clients)
	for i := 0; i < cfg.Clients; i++ {
		obs[i] = newEndCounter()
		ttl := cfg.TTL
		if len(cfg.TTLs) > 0 {
			ttl = cfg.TTLs[i%len(cfg.TTLs)]
		}
		opts := append([]redlock.Option{
			redlock.WithObserver(obs[i]),
			redlock.WithTTL(ttl),
			redlock.WithNodeTimeout(cfg.NodeTimeout),
			redlock.WithTries(1000), // bounded by the run's ctx in practice
			redlock.WithRetryDelay(0, cfg.RetryMax),
			// a node that comes back is reconnected within 50ms
			redlock.WithMuxConfig(mux.Config{ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond, Transport: cfg.Transport}),
		}, cfg.Options...)
		c, err := redlock.New(cfg.Addrs, opts...)
		if err != nil {
			return clients, obs, err
		}
		clients = append(clients, c)
	}
	return clients, obs, nil
}

func closeAll(clients []*redlock.Client) {
	for _, c := range clients {
		_ = c.Close()
	}
}

// newHolder is the holder with the given id on client c: its plans, and
// the pause hook's states for its own calls and for its keep-alive's
// extensions (run by the client's scheduler, one at a time per lock, one
// lock at a time per holder), each with its own random stream.
func newHolder(cfg *Config, c *redlock.Client, obs *endCounter, id int) *holder {
	w := &holder{cfg: cfg, c: c, obs: obs, id: id, plans: newPlanner(cfg, id), resources: resourceNames(cfg.Resources)}
	w.h = &hookState{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id))), pauseRate: cfg.PauseRate, sendRate: cfg.SendPauseRate, maxPause: cfg.MaxPause, lowGuess: cfg.LowGuessRate}
	w.kh = &hookState{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(id)|1<<32)), pauseRate: cfg.PauseRate, sendRate: cfg.SendPauseRate, maxPause: cfg.MaxPause}
	w.kl, _ = cfg.Faults.(KeyLister)
	w.lives, _ = cfg.Faults.(Lives)
	return w
}

// resourceNames are the contended resources' names.
func resourceNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("checker:res:%d", i)
	}
	return out
}

// watch checks the history every 100ms until ctx ends, and calls stop once
// it holds a violation (an overlap, with StopOnOverlapOnly).
func watch(ctx context.Context, cfg *Config, rec *Recorder, stop func()) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			rep := rec.Check()
			if rep.Violations > 0 || (!cfg.StopOnOverlapOnly && rep.Total() > 0) {
				stop()
				return
			}
		}
	}
}

// stats are a run's counts, kept by its holders.
type stats struct {
	acquired, notAcq, other, crashed, heldToEnd, extended, extFailed atomic.Int64
	keptAlive, kaEnded, multi                                        atomic.Int64
	selfExt, ctxEnded, endedOps, retained, kaLag, zombies            atomic.Int64
	endChecks                                                        atomic.Int64 // EndCheckRate
}

// into adds the counts, the store's and the holders' hook states' to res.
func (s *stats) into(res *Result, store *fencedStore, holders []*holder) {
	res.Acquired, res.NotAcquired, res.OtherErrors = s.acquired.Load(), s.notAcq.Load(), s.other.Load()
	res.Crashed, res.HeldToEnd = s.crashed.Load(), s.heldToEnd.Load()
	res.EndChecks = s.endChecks.Load()
	res.Extended, res.ExtendFailed = s.extended.Load(), s.extFailed.Load()
	res.KeptAlive, res.KeepAliveEnded, res.Multi = s.keptAlive.Load(), s.kaEnded.Load(), s.multi.Load()
	res.SelfExtended, res.CtxEnded, res.EndedCtxOps, res.Retained = s.selfExt.Load(), s.ctxEnded.Load(), s.endedOps.Load(), s.retained.Load()
	res.MaxKeepAliveLag = time.Duration(s.kaLag.Load())
	res.Writes, res.ZombieWrites, res.FencedOff, res.StaleWrites = store.writes.Load(), s.zombies.Load(), store.refused.Load(), store.stale.Load()
	for _, w := range holders {
		for _, h := range []*hookState{w.h, w.kh} {
			res.Attempts += h.attempts.Load()
			res.Paused += h.paused.Load()
			res.SendPaused += h.sendPause.Load()
			res.LowGuesses += h.lowered.Load()
			res.WriteBacks += h.writeBack.Load()
			if d := time.Duration(h.longest.Load()); d > res.LongestPause {
				res.LongestPause = d
			}
		}
	}
}
