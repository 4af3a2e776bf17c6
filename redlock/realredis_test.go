package redlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/checker"
)

// TestRealRedis runs the functional checks and a shorter safety run against
// 5 real redis-server processes (skipped loudly without redis-server unless
// REDMUX_REQUIRE_REDIS is set).
func TestRealRedis(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	addrs := redistest.Addrs(srv)
	ctx := context.Background()
	t.Cleanup(func() {
		for _, s := range srv {
			_ = s.Resume()
		}
	})

	t.Run("acquire-extend-release", func(t *testing.T) {
		c := newClient(t, addrs, redlock.WithTrustNodesAtStart()) // servers this test just started
		l, err := c.Acquire(ctx, "real:a", redlock.WithTTL(2*time.Second))
		require.NoError(t, err)
		require.GreaterOrEqual(t, count(holders(t, addrs, "real:a", l.Value())), 3)
		eventually(t, time.Second, func() bool { return count(holders(t, addrs, "real:a", l.Value())) == 5 },
			"every node gets the SET")
		for _, a := range addrs {
			p := rawDo(t, a, "PTTL", "real:a")
			require.True(t, p.N > 1000 && p.N <= 2000, "PTTL %d", p.N)
		}
		require.NoError(t, l.Extend(ctx, 20*time.Second))
		require.Greater(t, l.Validity(), 15*time.Second)
		eventually(t, time.Second, func() bool {
			for _, a := range addrs {
				if rawDo(t, a, "PTTL", "real:a").N < 15000 {
					return false
				}
			}
			return true
		}, "not every node extended")
		require.NoError(t, l.Release(ctx))
		require.Equal(t, 0, count(holders(t, addrs, "real:a", l.Value())))
	})

	t.Run("quorum-and-release-on-failure", func(t *testing.T) {
		c := newClient(t, addrs, redlock.WithTrustNodesAtStart()) // servers this test just started
		setForeign(t, addrs, "real:q", 0, 1)
		l, err := c.TryAcquire(ctx, "real:q")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		setForeign(t, addrs, "real:q", 2)
		_, err = c.TryAcquire(ctx, "real:q")
		var na *redlock.NotAcquiredError
		require.ErrorAs(t, err, &na)
		require.Equal(t, 3, na.Refused)
		eventually(t, time.Second, func() bool {
			return rawDo(t, addrs[3], "EXISTS", "real:q").N == 0 && rawDo(t, addrs[4], "EXISTS", "real:q").N == 0
		}, "failed attempt not released")
		for i := 0; i < 3; i++ {
			require.Equal(t, "someone-else", string(rawDo(t, addrs[i], "GET", "real:q").Data))
		}
	})

	t.Run("lost-and-expired", func(t *testing.T) {
		c := newClient(t, addrs, redlock.WithTrustNodesAtStart()) // servers this test just started
		l, err := c.Acquire(ctx, "real:l")
		require.NoError(t, err)
		waitAllHold(t, addrs, "real:l", l)
		for i := 0; i < 3; i++ {
			rawDo(t, addrs[i], "DEL", "real:l")
		}
		require.ErrorIs(t, l.Extend(ctx, time.Minute), redlock.ErrLockLost)
		require.ErrorIs(t, l.Release(ctx), redlock.ErrLockExpired, "validity was zeroed when the loss was seen")

		l, err = c.Acquire(ctx, "real:e", redlock.WithTTL(30*time.Millisecond))
		require.NoError(t, err)
		time.Sleep(40 * time.Millisecond)
		require.ErrorIs(t, l.Extend(ctx, time.Second), redlock.ErrLockExpired)
		require.ErrorIs(t, l.Release(ctx), redlock.ErrLockExpired)
	})

	t.Run("script-cache-flushed", func(t *testing.T) {
		c := newClient(t, addrs, redlock.WithTrustNodesAtStart()) // servers this test just started
		l, err := c.Acquire(ctx, "real:s")
		require.NoError(t, err)
		for _, a := range addrs {
			require.True(t, rawDo(t, a, "SCRIPT", "FLUSH").IsOK())
		}
		require.NoError(t, l.Extend(ctx, 5*time.Second))
		for _, a := range addrs {
			require.True(t, rawDo(t, a, "SCRIPT", "FLUSH").IsOK())
		}
		require.NoError(t, l.Release(ctx))
		for _, a := range addrs {
			require.Zero(t, rawDo(t, a, "EXISTS", "real:s").N)
		}
	})

	t.Run("paused-nodes", func(t *testing.T) {
		c := newClient(t, addrs, redlock.WithNodeTimeout(30*time.Millisecond), redlock.WithTrustNodesAtStart())
		warm(t, c)
		require.NoError(t, srv[0].Pause())
		require.NoError(t, srv[1].Pause())
		l, err := c.Acquire(ctx, "real:p", redlock.WithTries(3))
		require.NoError(t, err, "2 of 5 paused: still acquired")
		require.NoError(t, l.Release(ctx), "3 of 5 released")
		require.NoError(t, srv[2].Pause())
		start := time.Now()
		_, err = c.Acquire(ctx, "real:p", redlock.WithTries(3), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
		el := time.Since(start)
		require.ErrorIs(t, err, redlock.ErrNotAcquired, "3 of 5 paused")
		require.Less(t, el, 3*(30+20)*time.Millisecond+300*time.Millisecond)
		for i := 0; i < 3; i++ {
			require.NoError(t, srv[i].Resume())
		}
		l, err = c.Acquire(ctx, "real:p2", redlock.WithTries(50), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
		require.NoError(t, err, "after resume")
		_ = l.Release(ctx)
	})

	t.Run("safety-sigstop", func(t *testing.T) {
		n := 1500
		if testing.Short() {
			n = 400
		}
		var paused, mu = 0, sync.Mutex{}
		inject := func(ctx context.Context, rng *rand.Rand) {
			var wg sync.WaitGroup
			busy := make([]bool, len(srv))
			defer wg.Wait()
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(10*time.Millisecond + time.Duration(rng.Int64N(int64(20*time.Millisecond)))):
				}
				i := rng.IntN(len(srv))
				d := 20*time.Millisecond + time.Duration(rng.Int64N(int64(100*time.Millisecond)))
				mu.Lock()
				if busy[i] || countTrue(busy) >= 2 {
					mu.Unlock()
					continue
				}
				busy[i] = true
				paused++
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = srv[i].Pause()
					time.Sleep(d)
					_ = srv[i].Resume()
					mu.Lock()
					busy[i] = false
					mu.Unlock()
				}()
			}
		}
		res, err := checker.Run(checker.Config{
			Addrs: addrs, Clients: 3, Resources: 3, Acquisitions: n,
			MaxDuration: 2 * time.Minute, TTL: 300 * time.Millisecond,
			Seed: uint64(time.Now().UnixNano()), Faults: checker.InjectFunc(inject),
			CrashRate: 0.005, ExtendRate: 0.1, MaxHold: 300 * time.Microsecond, RetryMax: 5 * time.Millisecond,
		})
		require.NoError(t, err)
		mu.Lock()
		t.Logf("%v; %d SIGSTOP pauses", res, paused)
		mu.Unlock()
		require.Zero(t, res.Violations, "%v", res.Report)
		require.Zero(t, res.OtherErrors, "%v", res.FirstError)
		require.GreaterOrEqual(t, res.Acquired, int64(n))
	})
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
