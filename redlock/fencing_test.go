package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

// grantOn acquires key with fencing while the nodes outside on hold
// another value, so that exactly the nodes of on grant it, and releases it.
func grantOn(t *testing.T, c *redlock.Client, addrs []string, key string, on ...int) uint64 {
	t.Helper()
	var others []int
	for i := range addrs {
		if !contains(on, i) {
			others = append(others, i)
		}
	}
	setForeign(t, addrs, key, others...)
	l, err := c.TryAcquire(context.Background(), key, redlock.WithFencing())
	require.NoError(t, err, "granted by %v", on)
	require.Equal(t, on, grantedNodes(t, addrs, key, l))
	tok := l.Token()
	require.NoError(t, l.Release(context.Background()))
	for _, i := range others {
		rawDo(t, addrs[i], "DEL", key)
	}
	return tok
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func grantedNodes(t *testing.T, addrs []string, key string, l redlock.Lock) []int {
	t.Helper()
	var out []int
	for i, h := range holders(t, addrs, key, l.Value()) {
		if h {
			out = append(out, i)
		}
	}
	return out
}

// TestFencingCounterexample is issue 22's case against "max of the granted
// nodes' INCRs": G1 granted by {0,1,2}, G2 by {2,3,4}, G3 by {0,1,3}. With
// the write-back to a quorum every token is higher than the one before.
func TestFencingCounterexample(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	warm(t, c)
	t1 := grantOn(t, c, addrs, "fence", 0, 1, 2)
	t2 := grantOn(t, c, addrs, "fence", 2, 3, 4)
	t3 := grantOn(t, c, addrs, "fence", 0, 1, 3)
	require.Equal(t, uint64(1), t1, "a new resource starts at 1")
	require.Greater(t, t2, t1)
	require.Greater(t, t3, t2)
	for i, a := range addrs {
		r := rawDo(t, a, "GET", "fence:fence")
		v, _ := strconv.ParseUint(string(r.Data), 10, 64)
		require.LessOrEqual(t, v, t3, "node %d", i)
	}
}

// TestFencingTokens: successive holders get increasing tokens; a lock
// without fencing has token 0; multi-resource fencing is refused.
func TestFencingTokens(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithFencing())
	ctx := context.Background()
	var last uint64
	for i := 0; i < 20; i++ {
		l, err := c.Acquire(ctx, "tok")
		require.NoError(t, err)
		require.Greater(t, l.Token(), last)
		last = l.Token()
		require.NoError(t, l.Release(ctx))
	}
	plain := newClient(t, cl.Addrs())
	l, err := plain.Acquire(ctx, "plain")
	require.NoError(t, err)
	require.Zero(t, l.Token())
	require.NoError(t, l.Release(ctx))
	_, err = c.AcquireMulti(ctx, []string{"a", "b"})
	require.ErrorIs(t, err, redlock.ErrBadOption)
}

// TestFencingLostCounter: counters lost on a minority of the nodes are
// covered by the others (every granted quorum includes a node that kept
// its counter, and the token is 1 + the highest counter read) and the grant
// writes the token back everywhere it was granted; a counter that is not
// an integer is refused (ErrFencingUnknown) and the grant released. (Lost
// on a majority, a token can repeat: docs/FENCING.md.)
func TestFencingLostCounter(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithFencing(), redlock.WithTries(1))
	ctx := context.Background()
	var last uint64
	for i := 0; i < 3; i++ {
		l, err := c.Acquire(ctx, "lost")
		require.NoError(t, err)
		last = l.Token()
		require.NoError(t, l.Release(ctx))
	}
	time.Sleep(50 * time.Millisecond) // every write-back landed
	for _, i := range []int{0, 1} {
		rawDo(t, addrs[i], "DEL", "lost:fence")
	}
	l, err := c.Acquire(ctx, "lost")
	require.NoError(t, err)
	require.Greater(t, l.Token(), last)
	last = l.Token()
	require.NoError(t, l.Release(ctx))
	time.Sleep(50 * time.Millisecond)
	for i, a := range addrs {
		r := rawDo(t, a, "GET", "lost:fence")
		require.Equal(t, strconv.FormatUint(last, 10), string(r.Data), "node %d re-seeded", i)
	}
	for _, i := range []int{0, 1, 2} { // a majority: every granted quorum reads one
		rawDo(t, addrs[i], "SET", "lost:fence", "not-a-number")
	}
	_, err = c.Acquire(ctx, "lost")
	require.ErrorIs(t, err, redlock.ErrFencingUnknown)
	// the release after a failed attempt waits for its first answer only
	eventually(t, 2*time.Second, func() bool { return keyAbsent(t, addrs, "lost") }, "the grant without a token was not released")
}
