package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
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
	f := startWriteBack(t)
	type marker struct{}
	fired := f.sabotage(t, func(ctx context.Context, n int) bool { return ctx.Value(marker{}) != nil })
	actx := context.WithValue(context.WithValue(context.Background(), lowGuess{}, true), marker{}, true)
	l, err := f.c.TryAcquire(actx, "wb")
	f.restore()
	require.Equal(t, 1, *fired, "the grant took the write-back path")
	var ne *redlock.NotAcquiredError
	require.True(t, errors.As(err, &ne), "a token written back to 2 of 5 nodes was handed out: token %d (first %d), err %v", l.Token(), f.first, err)
	require.True(t, ne.FenceFailed, "%v", err)
	require.False(t, l.Held())
	// the nodes that refused kept their counters: the token reached 2
	for _, i := range []int{0, 1, 2} {
		v, _ := fenceCounter(t, f.addrs[i], "wb:fence")
		require.Equal(t, f.first, v, "node %d's counter", i)
	}
}

// TestFencingWriteBackFailedIsRetried: a fenced grant whose write-back
// falls short of the quorum fails like any other attempt (released
// everywhere) and Acquire retries it: here only the first attempt's
// write-back is sabotaged (the key leaves 3 of 5 nodes), and Acquire with
// 5 tries gets the lock on its second, with a token above the first
// holder's. It used to stop after that one try, whatever WithTries said.
func TestFencingWriteBackFailedIsRetried(t *testing.T) {
	f := startWriteBack(t)
	// only the first attempt's write-back is sabotaged
	fired := f.sabotage(t, func(_ context.Context, n int) bool { return n == 1 })
	actx := context.WithValue(context.Background(), lowGuess{}, true)
	l, err := f.c.Acquire(actx, "wb", redlock.WithTries(5), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	f.restore()
	require.NoError(t, err, "a fenced grant without its token was not retried")
	require.Equal(t, 2, *fired, "the second attempt took the write-back path too")
	require.Greater(t, l.Token(), f.first)
	require.NoError(t, l.Release(context.Background()))
}

// writeBack is a 5-node fake cluster and a fenced client whose first grant
// of "wb" set the counters to the clock's proposal, so that with the
// proposal forced to 1 (lowGuess in the ctx) a grant takes the write-back
// path.
type writeBack struct {
	cl      *fakeserver.Cluster
	addrs   []string
	c       *redlock.Client
	first   uint64 // the first grant's token
	restore func()
}

func startWriteBack(t *testing.T) *writeBack {
	withLowGuess(t)
	f := &writeBack{cl: startCluster(t, 5), restore: func() {}}
	f.addrs = f.cl.Addrs()
	f.c = newClient(t, f.addrs, redlock.WithFencing(), redlock.WithTTL(10*time.Second), redlock.WithNodeTimeout(time.Second))
	warm(t, f.c)
	l, err := f.c.TryAcquire(context.Background(), "wb")
	require.NoError(t, err)
	f.first = l.Token()
	waitAllHold(t, f.addrs, "wb", l)
	require.NoError(t, l.Release(context.Background()))
	return f
}

// sabotage makes the n-th write-back (1-based) of a ctx with lowGuess for
// which when says so find "wb" gone from 3 of the 5 nodes (as after an
// expiry on fast node clocks), once the acquisition has reached every
// node; it returns the count of write-backs so far. f.restore puts the
// hook back.
func (f *writeBack) sabotage(t *testing.T, when func(ctx context.Context, n int) bool) *int {
	fired := new(int)
	old := hook.Set(func(ctx context.Context, p hook.Point) {
		if p != hook.FenceWriteBack || ctx.Value(lowGuess{}) == nil {
			return
		}
		*fired++
		if !when(ctx, *fired) {
			return
		}
		for end := time.Now().Add(5 * time.Second); keysLeft(f.cl, "wb") < 5; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Errorf("the acquisition did not reach every node")
				return
			}
		}
		for i := 0; i < 3; i++ {
			rawDo(t, f.addrs[i], "DEL", "wb")
		}
	})
	f.restore = func() { hook.Set(old) }
	t.Cleanup(f.restore)
	return fired
}
