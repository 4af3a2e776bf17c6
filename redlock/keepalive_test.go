package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// waitDone waits for ctx to end (generous bound) and returns the time it
// was seen and its cause.
func waitDone(t *testing.T, ctx context.Context, d time.Duration) (time.Time, error) {
	t.Helper()
	select {
	case <-ctx.Done():
		return time.Now(), context.Cause(ctx)
	case <-time.After(d):
		t.Fatalf("keep-alive context not cancelled within %v", d)
	}
	return time.Time{}, nil
}

// A kept-alive lock outlives many TTLs, every node keeps it, and Release
// ends the keep-alive (cause ErrNotHeld).
func TestKeepAliveHolds(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	const ttl = 150 * time.Millisecond
	l, err := c.Acquire(ctx, "ka", redlock.WithTTL(ttl))
	require.NoError(t, err)
	hctx, err := l.KeepAlive(ctx)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return l.Extensions() >= 6 }, "not extended")
	require.NoError(t, hctx.Err())
	require.Positive(t, l.Validity())
	require.Equal(t, 5, count(holders(t, cl.Addrs(), "ka", l.Value())))
	_, err = l.KeepAlive(ctx)
	require.ErrorIs(t, err, redlock.ErrBadOption, "already kept alive")
	require.NoError(t, l.Release(ctx))
	_, cause := waitDone(t, hctx, time.Second) // Release cancels it at once
	require.ErrorIs(t, cause, redlock.ErrNotHeld)
	_, err = l.KeepAlive(ctx)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
}

// An extension that finds the value gone on a majority cancels the context
// with ErrLockLost at once; Validity is 0 from then on.
func TestKeepAliveLost(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "kal", redlock.WithTTL(10*time.Second))
	require.NoError(t, err)
	waitAllHold(t, cl.Addrs(), "kal", l)
	hctx, err := l.KeepAlive(ctx, redlock.KeepAliveFraction(0.01)) // extend about every 100 ms
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return l.Extensions() >= 1 }, "not extended")
	for i := 0; i < 3; i++ {
		require.True(t, cl.Nodes[i].Del("kal"))
	}
	_, cause := waitDone(t, hctx, 10*time.Second)
	require.ErrorIs(t, cause, redlock.ErrLockLost)
	require.Zero(t, l.Validity(), "a lost lock reports no validity")
	var ee *redlock.ExtendError
	require.ErrorAs(t, cause, &ee)
	require.GreaterOrEqual(t, ee.Refused, 3)
	_ = l.Release(ctx)
}

// Extensions that cannot reach the quorum (every node silent) are retried
// while validity remains; the context is cancelled with ErrLockExpired, not
// before the validity ended.
func TestKeepAliveExpires(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(20*time.Millisecond))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "kae", redlock.WithTTL(300*time.Millisecond))
	require.NoError(t, err)
	for _, n := range cl.Nodes {
		n.Blackhole()
		defer n.Heal()
	}
	hctx, err := l.KeepAlive(ctx)
	require.NoError(t, err)
	until := l.Until()
	seen, cause := waitDone(t, hctx, 10*time.Second)
	require.ErrorIs(t, cause, redlock.ErrLockExpired)
	require.False(t, seen.Before(until), "cancelled %v before the validity ended", until.Sub(seen))
	require.Zero(t, l.Validity())
	require.Zero(t, l.Extensions())
}

// KeepAliveMaxHold: no validity beyond the cap, ErrHoldLimit at the end.
func TestKeepAliveMaxHold(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	const maxHold = 700 * time.Millisecond
	l, err := c.Acquire(ctx, "kam", redlock.WithTTL(200*time.Millisecond))
	require.NoError(t, err)
	acquired := time.Now() // after the acquisition began: the cap counts from before it
	hctx, err := l.KeepAlive(ctx, redlock.KeepAliveMaxHold(maxHold))
	require.NoError(t, err)
	var last time.Time
	for hctx.Err() == nil {
		if u := l.Until(); !u.IsZero() {
			last = u
			require.False(t, u.After(acquired.Add(maxHold)), "validity %v beyond the cap", u.Sub(acquired.Add(maxHold)))
		}
		select {
		case <-hctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
		require.Less(t, time.Since(acquired), 10*time.Second)
	}
	require.ErrorIs(t, context.Cause(hctx), redlock.ErrHoldLimit)
	require.Positive(t, l.Extensions())
	require.False(t, time.Now().Before(last))
	_ = l.Release(ctx)

	// WithMaxExtensions stops keep-alive too
	l, err = c.Acquire(ctx, "kam", redlock.WithTTL(100*time.Millisecond), redlock.WithMaxExtensions(2))
	require.NoError(t, err)
	hctx, err = l.KeepAlive(ctx)
	require.NoError(t, err)
	_, cause := waitDone(t, hctx, 10*time.Second)
	require.ErrorIs(t, cause, redlock.ErrExtendLimit)
	require.Equal(t, 2, l.Extensions())
}

// The holder's ctx ending stops the keep-alive (its cause passes on); the
// lock then expires; Close cancels with ErrClosed.
func TestKeepAliveContextAndClose(t *testing.T) {
	cl := startCluster(t, 3)
	c, err := redlock.New(cl.Addrs())
	require.NoError(t, err)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "kac", redlock.WithTTL(100*time.Millisecond))
	require.NoError(t, err)
	pctx, stop := context.WithCancelCause(ctx)
	done := errors.New("job done")
	hctx, err := l.KeepAlive(pctx)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return l.Extensions() >= 1 }, "not extended")
	stop(done)
	_, cause := waitDone(t, hctx, time.Second)
	require.ErrorIs(t, cause, done)
	// a new keep-alive may follow at once
	pctx2, stop2 := context.WithCancel(ctx)
	hctx2, err := l.KeepAlive(pctx2)
	require.NoError(t, err)
	n0 := l.Extensions()
	eventually(t, 10*time.Second, func() bool { return l.Extensions() > n0 }, "the second keep-alive did not extend")
	require.NoError(t, hctx2.Err())
	stop2()
	eventually(t, 10*time.Second, func() bool { return l.Validity() == 0 }, "still extended after ctx ended")
	n := l.Extensions()
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, n, l.Extensions(), "extended after ctx ended")
	_ = l.Release(ctx)

	l, err = c.Acquire(ctx, "kac2", redlock.WithTTL(time.Second))
	require.NoError(t, err)
	hctx, err = l.KeepAlive(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, cause = waitDone(t, hctx, time.Second)
	require.ErrorIs(t, cause, redlock.ErrClosed)
	_, err = l.KeepAlive(ctx)
	require.ErrorIs(t, err, redlock.ErrClosed)
}

func TestKeepAliveOptions(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "kao")
	require.NoError(t, err)
	for _, o := range []redlock.KeepAliveOption{
		redlock.KeepAliveFraction(0), redlock.KeepAliveFraction(1), redlock.KeepAliveTTL(0),
		redlock.KeepAliveMaxHold(-time.Second),
	} {
		_, err := l.KeepAlive(ctx, o)
		require.ErrorIs(t, err, redlock.ErrBadOption)
	}
	var zero redlock.Lock
	_, err = zero.KeepAlive(ctx)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	l2, err := c.Acquire(ctx, "kao2", redlock.WithTTL(20*time.Millisecond))
	require.NoError(t, err)
	eventually(t, time.Second, func() bool { return l2.Validity() == 0 }, "never expired")
	_, err = l2.KeepAlive(ctx)
	require.ErrorIs(t, err, redlock.ErrLockExpired)
	require.NoError(t, l.Release(ctx))
}

// Many locks on one scheduler: all kept, none lost; extensions keep the
// TTL's pace (KeepAliveTTL shorter than the acquisition's). The TTLs leave
// an extension about a second of slack: with 400 ms (200 ms of slack) one
// of the 300 locks expired in CI, beside two CPU burners with -race.
func TestKeepAliveMany(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(200*time.Millisecond))
	ctx := context.Background()
	const n = 300
	locks := make([]redlock.Lock, n)
	ctxs := make([]context.Context, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, fmt.Sprintf("many:%d", i), redlock.WithTTL(4*time.Second))
			if err == nil {
				locks[i] = l
				ctxs[i], err = l.KeepAlive(ctx, redlock.KeepAliveTTL(2*time.Second))
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "lock %d", i)
	}
	eventually(t, 60*time.Second, func() bool {
		for _, l := range locks {
			if l.Extensions() < 3 {
				return false
			}
		}
		return true
	}, "not every lock extended 3 times")
	for i, l := range locks {
		require.NoError(t, ctxs[i].Err(), "lock %d: %v", i, context.Cause(ctxs[i]))
		require.Equal(t, 2*time.Second, l.TTL())
		require.NoError(t, l.Release(ctx))
		require.ErrorIs(t, context.Cause(ctxs[i]), redlock.ErrNotHeld)
	}
}
