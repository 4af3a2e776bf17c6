package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// With 2 of 5 nodes down, locks are still acquired, extended and released.
func TestLivenessTwoDown(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	warm(t, c)
	cl.Nodes[1].Down()
	cl.Nodes[3].Down()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		strict := i%2 == 1
		l, err := c.Acquire(ctx, "two-down", redlock.WithTries(3), redlock.WithStrictRelease(strict))
		require.NoError(t, err, "iteration %d", i)
		require.NoError(t, l.Extend(ctx, 5*time.Second))
		err = l.Release(ctx)
		if !strict {
			require.NoError(t, err, "a quorum released")
			continue
		}
		require.ErrorIs(t, err, redlock.ErrReleasePartial, "the down nodes cannot confirm")
		var re *redlock.ReleaseError
		require.ErrorAs(t, err, &re)
		require.Equal(t, []int{1, 3}, re.Failed)
		require.Equal(t, 3, re.Released)
	}
	// And with 2 blackholed (a partition): slower, still live.
	cl.Nodes[1].Up()
	cl.Nodes[3].Up()
	cl.Nodes[0].Blackhole()
	cl.Nodes[4].Blackhole()
	defer cl.Nodes[0].Heal()
	defer cl.Nodes[4].Heal()
	l, err := c.Acquire(ctx, "two-holes", redlock.WithTries(50), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
	require.NoError(t, err)
	_ = l.Release(ctx)
}

// With 3 of 5 nodes unreachable, Acquire fails with ErrNotAcquired within
// tries x (node timeout + max retry delay); at once (ErrUnreachable) when
// they refuse connections.
func TestLivenessThreeDown(t *testing.T) {
	const (
		tries    = 4
		timeout  = 30 * time.Millisecond
		maxDelay = 20 * time.Millisecond
		slack    = 300 * time.Millisecond // scheduling on a shared machine under -race
	)
	bound := tries * (timeout + maxDelay)
	opts := []redlock.LockOption{redlock.WithTries(tries), redlock.WithNodeTimeout(timeout),
		redlock.WithRetryDelay(10*time.Millisecond, maxDelay)}
	for _, mode := range []string{"down", "blackholed"} {
		t.Run(mode, func(t *testing.T) {
			cl := startCluster(t, 5)
			c := newClient(t, cl.Addrs())
			warm(t, c)
			for i := 0; i < 3; i++ {
				if mode == "down" {
					cl.Nodes[i].Down()
				} else {
					cl.Nodes[i].Blackhole()
					defer cl.Nodes[i].Heal()
				}
			}
			start := time.Now()
			_, err := c.Acquire(context.Background(), "three", append(opts, redlock.WithTTL(time.Second))...)
			el := time.Since(start)
			t.Logf("%s: gave up after %v (bound %v)", mode, el, bound)
			require.ErrorIs(t, err, redlock.ErrNotAcquired)
			var na *redlock.NotAcquiredError
			require.ErrorAs(t, err, &na)
			if mode == "down" {
				// refused connections: not retried once mux has marked
				// the nodes down (the first attempt may still see the
				// connections break)
				require.ErrorIs(t, err, redlock.ErrUnreachable)
				require.Less(t, na.Tries, tries)
			} else {
				// timeouts may end: retried
				require.NotErrorIs(t, err, redlock.ErrUnreachable)
				require.Equal(t, tries, na.Tries)
			}
			require.LessOrEqual(t, na.Granted, 2)
			require.Less(t, el, bound+slack)
			// Every attempt was released on the reachable nodes (a release
			// follows its SET on the key's connection); one still in flight
			// when Acquire returned, or lost, leaves a key that expires:
			// either way the nodes are free again within the TTL.
			eventually(t, 1500*time.Millisecond, func() bool {
				_, ok3 := cl.Nodes[3].Get("three")
				_, ok4 := cl.Nodes[4].Get("three")
				return !ok3 && !ok4
			}, "a failed attempt's key outlived its TTL")
		})
	}
}

// A holder that crashes (never releases) blocks the resource only until
// its TTL: then another client acquires it.
func TestLivenessCrashedHolder(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	const ttl = 300 * time.Millisecond
	crashed, err := redlock.New(addrs, redlock.WithTTL(ttl))
	require.NoError(t, err)
	ctx := context.Background()
	held, err := crashed.Acquire(ctx, "crash")
	require.NoError(t, err)
	acquiredAt := time.Now()
	end := held.Until()
	require.NoError(t, crashed.Close()) // the process dies without releasing

	c := newClient(t, addrs)
	_, err = c.TryAcquire(ctx, "crash")
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "held until the TTL")
	l, err := c.Acquire(ctx, "crash", redlock.WithTries(1000), redlock.WithRetryDelay(5*time.Millisecond, 10*time.Millisecond))
	require.NoError(t, err)
	got := time.Now()
	t.Logf("re-acquired %v after the crash (TTL %v)", got.Sub(acquiredAt), ttl)
	require.True(t, got.After(end), "not before the crashed holder's validity ended")
	require.Less(t, got.Sub(acquiredAt), ttl+500*time.Millisecond)
	require.NoError(t, l.Release(ctx))
}
