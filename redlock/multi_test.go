package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/redlock"
)

func TestAcquireMulti(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	res := []string{"m:a", "m:b", "m:c"}
	l, err := c.AcquireMulti(ctx, res, redlock.WithTTL(5*time.Second))
	require.NoError(t, err)
	require.Equal(t, "m:a", l.Resource())
	require.Equal(t, res, l.Resources())
	require.Positive(t, l.Validity())
	for _, r := range res {
		waitAllHold(t, addrs, r, l)
		in, err := c.Inspect(ctx, r)
		require.NoError(t, err)
		require.True(t, in.HeldBy(l), r)
	}

	// any overlap conflicts: a single lock on one of them, a multi-lock
	// sharing one
	_, err = c.TryAcquire(ctx, "m:b")
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	_, err = c.TryAcquireMulti(ctx, []string{"m:x", "m:c"})
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, "m:x+m:c", na.Resource)
	require.GreaterOrEqual(t, na.Refused, 3)
	// ... and nothing of it was left: m:x is free
	eventually(t, 2*time.Second, func() bool {
		in, err := c.Inspect(ctx, "m:x")
		return err == nil && in.Agree == 0
	}, "a failed multi-lock left a key")

	// extend: every key gets the new TTL on every node
	require.NoError(t, l.Extend(ctx, 60*time.Second))
	eventually(t, 2*time.Second, func() bool {
		for _, n := range cl.Nodes {
			for _, r := range res {
				if n.PTTL(r) < 50*time.Second {
					return false
				}
			}
		}
		return true
	}, "not every key extended")
	require.Greater(t, l.Validity(), 50*time.Second)

	// release deletes every key
	require.NoError(t, l.Release(ctx))
	for i, n := range cl.Nodes {
		for _, r := range res {
			_, ok := n.Get(r)
			require.False(t, ok, "node %d still has %s", i, r)
		}
	}
	l2, err := c.TryAcquire(ctx, "m:b")
	require.NoError(t, err)
	require.NoError(t, l2.Release(ctx))

	// keep-alive covers the set
	l3, err := c.AcquireMulti(ctx, res, redlock.WithTTL(200*time.Millisecond))
	require.NoError(t, err)
	hctx, err := l3.KeepAlive(ctx)
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return l3.Extensions() >= 3 }, "not kept alive")
	require.NoError(t, hctx.Err())
	for _, r := range res {
		in, err := c.Inspect(ctx, r)
		require.NoError(t, err)
		require.True(t, in.HeldBy(l3), r)
	}
	require.NoError(t, l3.Release(ctx))
}

// All or nothing: with one resource held elsewhere, no node keeps any key
// of the set, and the holder of the one resource is untouched.
func TestAcquireMultiAllOrNothing(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	setForeign(t, addrs, "an:b", 0, 1, 2) // a majority holds b for someone else
	_, err := c.TryAcquireMulti(ctx, []string{"an:a", "an:b", "an:c"})
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	// nodes 3 and 4 may have granted (and then been released)
	require.LessOrEqual(t, na.Granted, 2)
	for _, n := range na.Nodes[:3] {
		require.Equal(t, redlock.NodeRefused, n.Status, "node %d", n.Node)
	}
	eventually(t, 2*time.Second, func() bool {
		for _, n := range cl.Nodes {
			for _, k := range []string{"an:a", "an:c"} {
				if _, ok := n.Get(k); ok {
					return false
				}
			}
		}
		return true
	}, "keys of a failed multi-lock left")
	for i := 0; i < 3; i++ {
		v, ok := cl.Nodes[i].Get("an:b")
		require.True(t, ok)
		require.Equal(t, "someone-else", string(v))
	}
}

// Release of a multi-lock whose keys a majority no longer holds in full
// reports the loss; Extend then fails as lost.
func TestMultiLost(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()
	l, err := c.AcquireMulti(ctx, []string{"ml:a", "ml:b"})
	require.NoError(t, err)
	waitAllHold(t, addrs, "ml:b", l)
	for i := 0; i < 3; i++ {
		require.True(t, cl.Nodes[i].Del("ml:b"))
	}
	err = l.Extend(ctx, time.Minute)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.Zero(t, l.Validity())
	l, err = c.AcquireMulti(ctx, []string{"ml:c", "ml:d"})
	require.NoError(t, err)
	waitAllHold(t, addrs, "ml:d", l)
	for i := 0; i < 3; i++ {
		require.True(t, cl.Nodes[i].Del("ml:d"))
	}
	require.ErrorIs(t, l.Release(ctx), redlock.ErrLockLost)
	for i, n := range cl.Nodes {
		_, ok := n.Get("ml:c")
		require.False(t, ok, "node %d: ml:c not released", i)
	}
}

func TestAcquireMultiOptions(t *testing.T) {
	cl := startCluster(t, 3)
	c := newClient(t, cl.Addrs())
	ctx := context.Background()
	for _, rs := range [][]string{nil, {}, {"a", ""}, {"a", "b", "a"}} {
		_, err := c.AcquireMulti(ctx, rs)
		require.ErrorIs(t, err, redlock.ErrBadOption, "%q", rs)
		_, err = c.TryAcquireMulti(ctx, rs)
		require.ErrorIs(t, err, redlock.ErrBadOption, "%q", rs)
	}
	// one resource behaves as a lock on it
	l, err := c.AcquireMulti(ctx, []string{"one"})
	require.NoError(t, err)
	_, err = c.TryAcquire(ctx, "one")
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NoError(t, l.Release(ctx))
}
