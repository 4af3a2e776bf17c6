package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// Issue 11 (6): a Lock is a handle, so every copy sees the one lock.
// Releasing a copy must leave no copy reporting validity, and extending a
// copy moves every copy's validity.
func TestLockCopiesShareState(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs(), redlock.WithTTL(5*time.Second))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "copy", redlock.WithTTL(time.Second))
	require.NoError(t, err)
	cp := l
	require.NoError(t, cp.Extend(ctx, 5*time.Second))
	require.Greater(t, l.Validity(), 2*time.Second, "the original must see the copy's extension")
	require.Equal(t, 5*time.Second, l.TTL())
	require.Equal(t, 1, l.Extensions())

	held := []redlock.Lock{l, cp}
	require.NoError(t, held[1].Release(ctx))
	for i, x := range append(held, l, cp) {
		require.Zero(t, x.Validity(), "copy %d still reports validity after a copy was released", i)
		require.True(t, x.Until().IsZero(), "copy %d", i)
		require.ErrorIs(t, x.Release(ctx), redlock.ErrNotHeld, "copy %d", i)
		require.ErrorIs(t, x.Extend(ctx, time.Second), redlock.ErrNotHeld, "copy %d", i)
	}
	require.Zero(t, count(holders(t, cl.Addrs(), "copy", l.Value())))

	// The state is reused by the next lock: an old copy must not see it.
	l2, err := c.Acquire(ctx, "copy2")
	require.NoError(t, err)
	require.Zero(t, cp.Validity())
	require.ErrorIs(t, cp.Release(ctx), redlock.ErrNotHeld)
	require.Positive(t, l2.Validity())
	require.NoError(t, l2.Release(ctx))
}

// A Lock may be used from several goroutines: Validity while another
// goroutine extends or releases (run with -race).
func TestLockConcurrentUse(t *testing.T) {
	cl := startCluster(t, 3)
	// A generous node timeout: the test is about the handle, and beside
	// CI's burners under -race the default 50 ms once timed out a
	// Release on every node (then "partly failed", not ErrNotHeld).
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(5*time.Second))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "conc")
	require.NoError(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = l.Validity()
				_ = l.Until()
				_ = l.Extensions()
			}
		}()
	}
	for i := 0; i < 5; i++ {
		require.NoError(t, l.Extend(ctx, 10*time.Second))
	}
	var errs [2]error
	var rw sync.WaitGroup
	for i := range errs {
		rw.Add(1)
		go func() { defer rw.Done(); errs[i] = l.Release(ctx) }()
	}
	rw.Wait()
	close(stop)
	wg.Wait()
	// exactly one Release released it; the other found it not held
	if errs[0] == nil {
		require.ErrorIs(t, errs[1], redlock.ErrNotHeld)
	} else {
		require.ErrorIs(t, errs[0], redlock.ErrNotHeld)
		require.NoError(t, errs[1])
	}
	require.Zero(t, l.Validity())
}
