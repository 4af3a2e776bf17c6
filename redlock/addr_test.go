package redlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// URLs carry each node's password and database to its AUTH and SELECT;
// errors never show the password. Each node's URL is its own (mux resolves
// them per node), so a node with a wrong password fails alone.
func TestNewWithURLs(t *testing.T) {
	cl, err := fakeserver.StartCluster(3, fakeserver.Config{Password: testPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	var urls, wrong []string
	for _, a := range cl.Addrs() {
		urls = append(urls, "redis://:"+testPassword+"@"+a+"/2")
		wrong = append(wrong, "redis://default:not-"+testPassword+"@"+a)
	}
	c := newClient(t, urls, redlock.WithTrustNodesAtStart()) // the nodes were just started
	ctx := context.Background()
	l, err := c.Acquire(ctx, "url")
	require.NoError(t, err)
	in, err := c.Inspect(ctx, "url")
	require.NoError(t, err)
	require.True(t, in.HeldBy(l))
	for i, n := range cl.Nodes {
		_, ok := n.Get("url") // database 0
		require.False(t, ok, "node %d: the key must be in database 2", i)
	}
	require.NoError(t, l.Release(ctx))

	c2 := newClient(t, wrong)
	_, err = c2.Acquire(ctx, "url")
	require.ErrorIs(t, err, redlock.ErrUnreachable)
	require.Contains(t, err.Error(), "WRONGPASS")
	require.NotContains(t, err.Error(), testPassword)

	// Two nodes with the right password are a quorum of three.
	mixed := append(append([]string(nil), urls[:2]...), wrong[2])
	c3 := newClient(t, mixed)
	l, err = c3.Acquire(ctx, "mixed")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx), "two of three released: the lock is free")
	l, err = c3.Acquire(ctx, "mixed", redlock.WithStrictRelease(true))
	require.NoError(t, err)
	err = l.Release(ctx) // strict: the third node is reported, not hidden
	require.ErrorContains(t, err, "2 released")
	require.ErrorContains(t, err, "WRONGPASS")
	require.NotContains(t, err.Error(), testPassword)

	const secret = "hunter2-secret"
	for _, bad := range []string{
		"http://u:" + secret + "@h:1", "redis://u:" + secret + "@h:99999", "redis://u:" + secret + "@h:1/x",
		"redis://u:" + secret + "@h:1/-1", "redis://u:" + secret + "@h:1?nosuch=1", "redis://u:" + secret + "@h:1%zz",
		"nohost",
	} {
		_, err := redlock.New([]string{bad, urls[1], urls[2]})
		require.ErrorIs(t, err, redlock.ErrBadOption, bad)
		require.ErrorIs(t, err, mux.ErrConfig, bad)
		require.NotContains(t, err.Error(), secret, bad)
	}
}
