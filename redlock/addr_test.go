package redlock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
)

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want redlock.NodeAddr
		str  string
	}{
		{"127.0.0.1:7000", redlock.NodeAddr{Addr: "127.0.0.1:7000"}, "127.0.0.1:7000"},
		{"redis://10.0.0.1:7000", redlock.NodeAddr{Addr: "10.0.0.1:7000", URL: true}, "redis://10.0.0.1:7000"},
		{"redis://h", redlock.NodeAddr{Addr: "h:6379", URL: true}, "redis://h:6379"},
		{"redis://:pw@h:1/3", redlock.NodeAddr{Addr: "h:1", Password: "pw", DB: 3, URL: true}, "redis://:xxxxx@h:1/3"},
		{"redis://u:pw@h:1", redlock.NodeAddr{Addr: "h:1", Username: "u", Password: "pw", URL: true}, "redis://u:xxxxx@h:1"},
		{"redis://pw@h:1", redlock.NodeAddr{Addr: "h:1", Password: "pw", URL: true}, "redis://:xxxxx@h:1"},
		{"redis://[::1]:7000/0", redlock.NodeAddr{Addr: "[::1]:7000", URL: true}, "redis://[::1]:7000"},
	} {
		got, err := redlock.ParseAddr(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
		require.Equal(t, tc.str, got.String(), tc.in)
	}
	const secret = "hunter2-secret"
	for _, in := range []string{
		"nohost", "h:", "rediss://u:" + secret + "@h:1", "http://u:" + secret + "@h:1",
		"redis://u:" + secret + "@h:99999", "redis://u:" + secret + "@h:1/x", "redis://u:" + secret + "@h:1/-1",
		"redis://u:" + secret + "@h:1?db=2", "redis://u:" + secret + "@:1", "redis://u:" + secret + "@h:1:2:3",
		"redis://u:" + secret + "@h:1%zz",
	} {
		_, err := redlock.ParseAddr(in)
		require.ErrorIs(t, err, redlock.ErrBadOption, in)
		require.NotContains(t, err.Error(), secret, in)
	}
}

// URLs carry the password (and user and database) to every node's AUTH;
// errors and String never show it.
func TestNewWithURLs(t *testing.T) {
	cl, err := fakeserver.StartCluster(3, fakeserver.Config{Password: testPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	var urls, wrong []string
	for _, a := range cl.Addrs() {
		urls = append(urls, "redis://:"+testPassword+"@"+a+"/2")
		wrong = append(wrong, "redis://default:not-"+testPassword+"@"+a)
	}
	c := newClient(t, urls)
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

	mixed := append([]string{urls[0]}, wrong[1:]...)
	_, err = redlock.New(mixed)
	require.ErrorIs(t, err, redlock.ErrBadOption)
	require.NotContains(t, err.Error(), testPassword)
	require.True(t, strings.Contains(err.Error(), "xxxxx"), err.Error())
}
