package redlock_test

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/checker"
)

// The full proof (make safety) runs with -safety.acquisitions=100000.
var safetyN = flag.Int("safety.acquisitions", 0,
	"successful acquisitions of TestSafetyUnderFaults (default 1000 with -short, 3000 otherwise; the full proof, make safety, uses 100000)")

func safetyCount() int {
	switch {
	case *safetyN > 0:
		return *safetyN
	case testing.Short():
		return 1000
	}
	return 3000
}

// TestSafetyUnderFaults: many clients contend for a few resources on a
// 5-node cluster while a minority of nodes suffers latency spikes, goes
// down and up, is blackholed, restarts (keeping data, or losing it and
// staying away longer than the TTL), and every clock drifts within the
// allowance. No two holders' validity intervals may overlap.
func TestSafetyUnderFaults(t *testing.T) {
	n := safetyCount()
	cl := startCluster(t, 5)
	const ttl = 300 * time.Millisecond
	var fc checker.FaultCounts
	res, err := checker.Run(checker.Config{
		Addrs:        cl.Addrs(),
		Clients:      4, // x 2 workers each
		Resources:    3,
		Acquisitions: n,
		MaxDuration:  20 * time.Minute,
		TTL:          ttl,
		Seed:         uint64(time.Now().UnixNano()),
		Inject: checker.FakeFaults(cl, checker.Profile{
			LatencySpikes: true, DownUp: true, Blackhole: true,
			RestartKeep: true, RestartDelayed: true,
			ClockDrift: 0.004, // below the 0.01 drift factor
			MaxTTL:     ttl,
		}, &fc),
	})
	require.NoError(t, err)
	t.Logf("%v", res)
	t.Logf("%v", &fc)
	require.Zero(t, res.Violations, "safety violated: %v", res.Report)
	require.Zero(t, res.OtherErrors, "unexpected error: %v", res.FirstError)
	require.GreaterOrEqual(t, res.Acquired, int64(n))
	require.Positive(t, res.NotAcquired, "the resources were contended")
	require.Positive(t, fc.Latency.Load()+fc.Down.Load()+fc.Blackhole.Load(), "faults were injected")
}

// The scripted counter-example of the Redlock analysis: A holds the lock
// on exactly a quorum (two nodes were unreachable), one of A's nodes
// restarts without its data and without the delay, and B acquires on the
// other majority while A's validity lasts. The checker must report it; with
// the delayed restart it must not.
func TestSafetyRestartScripted(t *testing.T) {
	for _, delayed := range []bool{false, true} {
		name := map[bool]string{false: "no delay: violation", true: "delayed: safe"}[delayed]
		t.Run(name, func(t *testing.T) {
			cl := startCluster(t, 5)
			addrs := cl.Addrs()
			const ttl = time.Second
			a := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithNodeTimeout(30*time.Millisecond))
			b := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithNodeTimeout(30*time.Millisecond),
				redlock.WithRetryDelay(2*time.Millisecond, 5*time.Millisecond), redlock.WithTries(1000))
			warm(t, a)
			warm(t, b)
			ctx := context.Background()
			rec := checker.NewRecorder()

			cl.Nodes[3].Down()
			cl.Nodes[4].Down()
			la, err := a.Acquire(ctx, "pay")
			require.NoError(t, err)
			rec.Record("pay", 1, time.Now(), la.Until())
			cl.Nodes[3].Up()
			cl.Nodes[4].Up()
			restarted := make(chan error, 1)
			delay := time.Duration(0)
			if delayed {
				delay = ttl + 100*time.Millisecond
			}
			go func() { restarted <- cl.Nodes[2].Restart(true, delay) }()
			if !delayed {
				require.NoError(t, <-restarted)
			}
			lb, err := b.Acquire(ctx, "pay")
			require.NoError(t, err)
			rec.Record("pay", 2, time.Now(), lb.Until())
			if delayed {
				require.NoError(t, <-restarted)
			}
			rep := rec.Check()
			t.Logf("%v", rep)
			if delayed {
				require.Zero(t, rep.Violations)
			} else {
				require.Equal(t, 1, rep.Violations, "the checker must see B inside A's validity")
			}
			_ = lb.Release(ctx)
		})
	}
}

// Randomized: nodes restarting without persistence and without the delay
// break safety, and the checker finds it.
func TestSafetyFindsRestartWithoutDelay(t *testing.T) {
	cl := startCluster(t, 5)
	const ttl = 200 * time.Millisecond
	var fc checker.FaultCounts
	res, err := checker.Run(checker.Config{
		Addrs:           cl.Addrs(),
		Clients:         3,
		Resources:       2,
		Acquisitions:    1500,
		MaxDuration:     15 * time.Second,
		TTL:             ttl,
		CrashRate:       0.2, // holders that keep the lock to the end of validity
		StopOnViolation: true,
		Seed:            uint64(time.Now().UnixNano()),
		Inject: checker.FakeFaults(cl, checker.Profile{
			RestartNoDelay: true, MaxTTL: ttl, Every: 10 * time.Millisecond, MaxImpaired: 5,
		}, &fc),
	})
	require.NoError(t, err)
	t.Logf("%v", res)
	t.Logf("%v", &fc)
	require.Positive(t, res.Violations, "restarts without persistence and delay must produce violations")
}

// Clocks of a majority running faster than the drift allowance expire the
// lock on the nodes while its holder still counts it valid.
func TestSafetyFindsClockDriftBeyondBound(t *testing.T) {
	t.Run("scripted", func(t *testing.T) {
		for _, rate := range []float64{0.005, 0.5} {
			cl := startCluster(t, 5)
			addrs := cl.Addrs()
			for i := 0; i < 3; i++ {
				cl.Nodes[i].SetClock(0, rate)
			}
			const ttl = 300 * time.Millisecond
			a := newClient(t, addrs, redlock.WithTTL(ttl))
			b := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTries(1000),
				redlock.WithRetryDelay(time.Millisecond, 3*time.Millisecond))
			ctx := context.Background()
			rec := checker.NewRecorder()
			la, err := a.Acquire(ctx, "clock")
			require.NoError(t, err)
			rec.Record("clock", 1, time.Now(), la.Until())
			lb, err := b.Acquire(ctx, "clock")
			require.NoError(t, err)
			rec.Record("clock", 2, time.Now(), lb.Until())
			rep := rec.Check()
			t.Logf("majority drift rate %v: %v", rate, rep)
			if rate < 0.01 {
				require.Zero(t, rep.Violations, "drift within the allowance is safe")
			} else {
				require.Equal(t, 1, rep.Violations, "drift beyond the allowance must be caught")
			}
		}
	})
	t.Run("randomized", func(t *testing.T) {
		cl := startCluster(t, 5)
		const ttl = 200 * time.Millisecond
		var fc checker.FaultCounts
		res, err := checker.Run(checker.Config{
			Addrs:           cl.Addrs(),
			Clients:         3,
			Resources:       2,
			Acquisitions:    1000,
			MaxDuration:     15 * time.Second,
			TTL:             ttl,
			CrashRate:       0.2,
			StopOnViolation: true,
			Seed:            uint64(time.Now().UnixNano()),
			Inject:          checker.FakeFaults(cl, checker.Profile{FastClocks: 0.3, MaxTTL: ttl}, &fc),
		})
		require.NoError(t, err)
		t.Logf("%v", res)
		require.Positive(t, res.Violations, "a majority of clocks 30%% fast must produce violations")
	})
}
