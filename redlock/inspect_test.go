package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

func TestInspect(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs)
	ctx := context.Background()

	in, err := c.Inspect(ctx, "insp")
	require.NoError(t, err)
	require.False(t, in.Held())
	require.Zero(t, in.Agree)
	require.Len(t, in.Nodes, 5)
	for i, n := range in.Nodes {
		require.Nil(t, n.Value, "node %d", i)
		require.NoError(t, n.Err)
		require.Equal(t, addrs[i], n.Addr)
	}

	l, err := c.Acquire(ctx, "insp", redlock.WithTTL(10*time.Second))
	require.NoError(t, err)
	waitAllHold(t, addrs, "insp", l)
	in, err = c.Inspect(ctx, "insp")
	require.NoError(t, err)
	require.True(t, in.HeldBy(l))
	require.Equal(t, 5, in.Agree)
	require.Equal(t, l.Value(), in.Holder)
	require.Greater(t, in.TTL, 9*time.Second)
	require.LessOrEqual(t, in.TTL, 10*time.Second)

	// split: two nodes hold another value, one with a short TTL; a
	// quorum still agrees on l, and the TTL is the quorum-th longest
	for _, i := range []int{0, 1} {
		require.True(t, cl.Nodes[i].Del("insp"))
	}
	setForeign(t, addrs, "insp", 0, 1)
	cl.Nodes[2].Set("insp", string(l.Value()), 3*time.Second)
	in, err = c.Inspect(ctx, "insp")
	require.NoError(t, err)
	require.True(t, in.HeldBy(l))
	require.Equal(t, 3, in.Agree)
	require.Equal(t, "someone-else", string(in.Nodes[0].Value))
	require.Greater(t, in.Nodes[0].TTL, 50*time.Second)
	require.Greater(t, in.TTL, 2*time.Second)
	require.LessOrEqual(t, in.TTL, 3*time.Second, "3 of 5 hold it only as long as node 2 does")

	// a node down answers with its error; two values with 2 each: no holder
	cl.Nodes[4].Down()
	require.True(t, cl.Nodes[3].Del("insp"))
	in, err = c.Inspect(ctx, "insp")
	require.NoError(t, err)
	require.False(t, in.Held())
	require.False(t, in.HeldBy(l))
	require.Equal(t, 2, in.Agree)
	require.Error(t, in.Nodes[4].Err)
	e4 := in.Nodes[4].Err
	require.True(t, errors.Is(e4, mux.ErrConnBroken) || errors.Is(e4, mux.ErrNodeDown), "%v", e4)
	require.Nil(t, in.Nodes[3].Value)

	require.NoError(t, c.Close())
	_, err = c.Inspect(ctx, "insp")
	require.ErrorIs(t, err, redlock.ErrClosed)
	_, err = newClient(t, addrs).Inspect(ctx, "")
	require.ErrorIs(t, err, redlock.ErrBadOption)
}
