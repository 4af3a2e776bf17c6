package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/internal/hook"
)

// TestFencingWriteBackRefusedIsNoWitness (issue 34, R12 a): the token's
// write-back is guarded (scripts.FenceWriteBack writes only where the
// lock's key still holds the value, and answers 0 where it does not); a
// node whose guard refused is no witness of the token. Here a fenced
// grant takes the write-back path (its proposal is too low), and before
// the write-back goes out the key is gone from 3 of 5 nodes (as after an
// expiry on fast node clocks): the write-back reaches 2 witnesses, short
// of the quorum, so the attempt fails (FenceFailed) and no token is
// handed out. Counting the refusals' 0 as success handed out a token that
// only 2 nodes' counters carry, which a later grant on the other 3 could
// repeat.
func TestFencingWriteBackRefusedIsNoWitness(t *testing.T) {
	withLowGuess(t)
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithFencing(), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(time.Second))
	warm(t, c)
	ctx := context.Background()
	// a first grant sets the counters to the clock's proposal: a proposal
	// of 1 is below them (the write-back path)
	l, err := c.TryAcquire(ctx, "wb")
	require.NoError(t, err)
	first := l.Token()
	waitAllHold(t, addrs, "wb", l)
	require.NoError(t, l.Release(ctx))

	type marker struct{}
	fired := 0
	old := hook.Set(func(ctx context.Context, p hook.Point) {
		if p != hook.FenceWriteBack || ctx.Value(marker{}) == nil {
			return
		}
		fired++
		// every node ran the acquisition (the grant returned at the
		// quorum), then the key leaves 3 of them
		for end := time.Now().Add(5 * time.Second); keysLeft(cl, "wb") < 5; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Errorf("the acquisition did not reach every node")
				return
			}
		}
		for i := 0; i < 3; i++ {
			rawDo(t, addrs[i], "DEL", "wb")
		}
	})
	t.Cleanup(func() { hook.Set(old) })
	actx := context.WithValue(context.WithValue(ctx, lowGuess{}, true), marker{}, true)
	l, err = c.TryAcquire(actx, "wb")
	hook.Set(old)
	require.Equal(t, 1, fired, "the grant took the write-back path")
	var ne *redlock.NotAcquiredError
	require.True(t, errors.As(err, &ne), "a token written back to 2 of 5 nodes was handed out: token %d (first %d), err %v", l.Token(), first, err)
	require.True(t, ne.FenceFailed, "%v", err)
	require.False(t, l.Held())
	// the nodes that refused kept their counters: the token reached 2
	for _, i := range []int{0, 1, 2} {
		v, _ := fenceCounter(t, addrs[i], "wb:fence")
		require.Equal(t, first, v, "node %d's counter", i)
	}
}

// TestFencingWriteBackFailedIsRetried: a fenced grant whose write-back
// falls short of the quorum fails like any other attempt (released
// everywhere) and Acquire retries it: here only the first attempt's
// write-back is sabotaged (the key leaves 3 of 5 nodes), and Acquire with
// 5 tries gets the lock on its second, with a token above the first
// holder's. It used to stop after that one try, whatever WithTries said.
func TestFencingWriteBackFailedIsRetried(t *testing.T) {
	withLowGuess(t)
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithFencing(), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(time.Second))
	warm(t, c)
	ctx := context.Background()
	l, err := c.TryAcquire(ctx, "wb")
	require.NoError(t, err)
	first := l.Token()
	waitAllHold(t, addrs, "wb", l)
	require.NoError(t, l.Release(ctx))

	fired := 0
	old := hook.Set(func(ctx context.Context, p hook.Point) {
		if p != hook.FenceWriteBack || ctx.Value(lowGuess{}) == nil {
			return
		}
		if fired++; fired > 1 {
			return // only the first attempt's write-back is sabotaged
		}
		for end := time.Now().Add(5 * time.Second); keysLeft(cl, "wb") < 5; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Errorf("the acquisition did not reach every node")
				return
			}
		}
		for i := 0; i < 3; i++ {
			rawDo(t, addrs[i], "DEL", "wb")
		}
	})
	t.Cleanup(func() { hook.Set(old) })
	actx := context.WithValue(ctx, lowGuess{}, true)
	l, err = c.Acquire(actx, "wb", redlock.WithTries(5), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	hook.Set(old)
	require.NoError(t, err, "a fenced grant without its token was not retried")
	require.Equal(t, 2, fired, "the second attempt took the write-back path too")
	require.Greater(t, l.Token(), first)
	require.NoError(t, l.Release(ctx))
}
