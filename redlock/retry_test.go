package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// A RetryFunc is asked after every failed attempt, in order, and can stop
// the retries; contention is retried until it says stop.
func TestRetryFunc(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "rf")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	var asked []int
	f := func(attempt int) (time.Duration, bool) {
		asked = append(asked, attempt)
		return time.Millisecond, attempt < 4
	}
	_, err = c.Acquire(ctx, "rf", redlock.WithRetryFunc(f), redlock.WithTries(100))
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 4, na.Tries)
	require.Equal(t, []int{1, 2, 3, 4}, asked)

	// WithTries still bounds it
	asked = nil
	_, err = c.Acquire(ctx, "rf", redlock.WithRetryFunc(f), redlock.WithTries(2))
	require.ErrorAs(t, err, &na)
	require.Equal(t, 2, na.Tries)
	require.Equal(t, []int{1}, asked)

	// and a later WithRetryDelay replaces it
	asked = nil
	_, err = c.Acquire(ctx, "rf", redlock.WithRetryFunc(f), redlock.WithRetryDelay(0, time.Millisecond), redlock.WithTries(6))
	require.ErrorAs(t, err, &na)
	require.Equal(t, 6, na.Tries)
	require.Empty(t, asked)
}

// WithBackoff: the lock is taken once the holder lets go, and the waits
// grow (the total of 5 failed attempts' waits is at least the lower
// bounds' sum; generous, no upper timing bound).
func TestBackoff(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "bo")
	require.NoError(t, err)
	start := time.Now()
	_, err = c.Acquire(ctx, "bo", redlock.WithBackoff(2*time.Millisecond, 16*time.Millisecond), redlock.WithTries(6))
	el := time.Since(start)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 6, na.Tries)
	// waits after attempts 1..5: at least 1, 2, 4, 8, 8 ms
	require.GreaterOrEqual(t, el, 23*time.Millisecond)
	go func() { time.Sleep(20 * time.Millisecond); _ = l.Release(ctx) }()
	l2, err := c.Acquire(ctx, "bo", redlock.WithBackoff(time.Millisecond, 10*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))
}

func TestRetryOptionValidation(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	for _, o := range []redlock.LockOption{
		redlock.WithBackoff(-time.Millisecond, time.Second),
		redlock.WithBackoff(0, time.Second),
		redlock.WithBackoff(time.Second, time.Millisecond),
	} {
		_, err := c.Acquire(ctx, "v", o)
		require.ErrorIs(t, err, redlock.ErrBadOption)
	}
	_, err := redlock.New(cl.Addrs(), redlock.WithBackoff(time.Second, 0))
	require.ErrorIs(t, err, redlock.ErrBadOption)
}
