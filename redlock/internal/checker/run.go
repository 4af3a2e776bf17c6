package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// Config describes a safety run.
type Config struct {
	Addrs            []string
	Clients          int // redlock clients, each with its own mux connections; default 4
	WorkersPerClient int // goroutines per client; default 2
	Resources        int // contended resources; default 3
	Acquisitions     int // stop after this many successful acquisitions
	MaxDuration      time.Duration
	TTL              time.Duration // lock TTL; default 300ms
	NodeTimeout      time.Duration // default 20ms
	CrashRate        float64       // fraction of holders that never release (hold to validity end); default 0.005
	ExtendRate       float64       // fraction of holders that extend once; default 0.1
	MaxHold          time.Duration // a releasing holder holds U[0, MaxHold); default 300us
	Seed             uint64
	// Inject runs while the workload runs and adds faults until ctx is
	// done; it must undo its faults before returning.
	Inject func(ctx context.Context, rng *rand.Rand)
	// Options are added to every client.
	Options []redlock.Option
	// StopOnViolation ends the run early once a violation is recorded
	// (checked every 200ms), for runs that are expected to find one.
	StopOnViolation bool
}

// Result is the outcome of Run.
type Result struct {
	Report
	Acquired    int64 // successful acquisitions (each recorded)
	NotAcquired int64 // Acquire calls that gave up
	OtherErrors int64 // errors that are not ErrNotAcquired (must be 0)
	Crashed     int64 // holders that never released
	Extended    int64 // successful extensions
	Elapsed     time.Duration
	FirstError  error
}

func (r Result) String() string {
	return fmt.Sprintf("%d acquired, %d not acquired (contention/faults), %d crashed holders, %d extensions, %d other errors in %v: %s",
		r.Acquired, r.NotAcquired, r.Crashed, r.Extended, r.OtherErrors, r.Elapsed.Round(time.Millisecond), r.Report)
}

func (c *Config) defaults() {
	if c.Clients <= 0 {
		c.Clients = 4
	}
	if c.WorkersPerClient <= 0 {
		c.WorkersPerClient = 2
	}
	if c.Resources <= 0 {
		c.Resources = 3
	}
	if c.TTL <= 0 {
		c.TTL = 300 * time.Millisecond
	}
	if c.NodeTimeout <= 0 {
		c.NodeTimeout = 20 * time.Millisecond
	}
	if c.CrashRate == 0 {
		c.CrashRate = 0.005
	}
	if c.ExtendRate == 0 {
		c.ExtendRate = 0.1
	}
	if c.MaxHold <= 0 {
		c.MaxHold = 300 * time.Microsecond
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = time.Minute
	}
}

// Run drives the workload until Acquisitions were recorded or MaxDuration
// passed, then checks the recorded intervals.
func Run(cfg Config) (Result, error) {
	cfg.defaults()
	clients := make([]*redlock.Client, 0, cfg.Clients)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	for i := 0; i < cfg.Clients; i++ {
		opts := append([]redlock.Option{
			redlock.WithTTL(cfg.TTL),
			redlock.WithNodeTimeout(cfg.NodeTimeout),
			redlock.WithTries(3),
			redlock.WithRetryDelay(time.Millisecond, 5*time.Millisecond),
			// a node that comes back is reconnected within 100ms
			redlock.WithMuxConfig(mux.Config{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond}),
		}, cfg.Options...)
		c, err := redlock.New(cfg.Addrs, opts...)
		if err != nil {
			return Result{}, err
		}
		clients = append(clients, c)
	}
	resources := make([]string, cfg.Resources)
	for i := range resources {
		resources[i] = fmt.Sprintf("checker:res:%d", i)
	}

	rec := NewRecorder()
	var res Result
	var firstErr atomic.Pointer[error]
	ctx, cancel := context.WithTimeout(context.Background(), cfg.MaxDuration)
	defer cancel()
	start := time.Now()

	var injWG sync.WaitGroup
	if cfg.Inject != nil {
		injWG.Add(1)
		go func() {
			defer injWG.Done()
			cfg.Inject(ctx, rand.New(rand.NewPCG(cfg.Seed, 0xfa17)))
		}()
	}

	if cfg.StopOnViolation {
		injWG.Add(1)
		go func() {
			defer injWG.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if rec.Check().Violations > 0 {
						cancel()
						return
					}
				}
			}
		}()
	}

	var wg sync.WaitGroup
	var acquired, notAcq, other, crashed, extended atomic.Int64
	for ci, c := range clients {
		for wi := 0; wi < cfg.WorkersPerClient; wi++ {
			id := ci*cfg.WorkersPerClient + wi
			wg.Add(1)
			go func(c *redlock.Client, id int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(cfg.Seed, uint64(id)))
				note := func(err error) {
					other.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				for ctx.Err() == nil && acquired.Load() < int64(cfg.Acquisitions) {
					r := resources[rng.IntN(len(resources))]
					l, err := c.Acquire(ctx, r)
					if err != nil {
						if !errors.Is(err, redlock.ErrNotAcquired) {
							note(err)
						}
						notAcq.Add(1)
						continue
					}
					got := time.Now()
					acquired.Add(1)
					if rng.Float64() < cfg.CrashRate {
						// A crashed holder: it believes it holds the lock
						// until its validity ends and never releases.
						crashed.Add(1)
						rec.Record(r, id, got, l.Until())
						continue
					}
					if hold := cfg.MaxHold; hold > 0 {
						spin(time.Duration(rng.Int64N(int64(hold))))
					}
					if rng.Float64() < cfg.ExtendRate {
						if err := l.Extend(ctx, cfg.TTL); err == nil {
							extended.Add(1)
						} else if !errors.Is(err, redlock.ErrLockLost) && !errors.Is(err, redlock.ErrLockExpired) &&
							!errors.Is(err, redlock.ErrExtendLimit) && !errors.Is(err, context.DeadlineExceeded) {
							note(err)
						}
					}
					until := l.Until()
					relAt := time.Now()
					end := until
					if relAt.Before(end) {
						end = relAt
					}
					rec.Record(r, id, got, end)
					_ = l.Release(context.Background()) // partial/expired/lost releases are expected under faults
				}
			}(c, id)
		}
	}
	wg.Wait()
	cancel()
	injWG.Wait()
	res.Elapsed = time.Since(start)
	res.Report = rec.Check()
	res.Acquired, res.NotAcquired, res.OtherErrors = acquired.Load(), notAcq.Load(), other.Load()
	res.Crashed, res.Extended = crashed.Load(), extended.Load()
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

// spin waits d, yielding the processor, without a timer (timers have ~1ms
// granularity under load); longer waits sleep.
func spin(d time.Duration) {
	if d > time.Millisecond {
		time.Sleep(d)
		return
	}
	for t := time.Now(); time.Since(t) < d; {
		runtime.Gosched()
	}
}
