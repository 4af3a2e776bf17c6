package redlock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

const testPassword = "s3cret-pass-word" // must never appear in an error

// Wrong password: Acquire says why (WRONGPASS, mux.ErrAuth), fails fast
// (one attempt, not 32), and never prints the password.
func TestErrorWrongPassword(t *testing.T) {
	cl, err := fakeserver.StartCluster(5, fakeserver.Config{Password: testPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	c := newClient(t, cl.Addrs(), redlock.WithMuxConfig(mux.Config{Password: "not-the-" + testPassword}))
	start := time.Now()
	_, err = c.Acquire(context.Background(), "auth")
	el := time.Since(start)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, redlock.ErrUnreachable)
	require.ErrorIs(t, err, mux.ErrAuth)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Tries, "a quorum refusing authentication is not retried")
	require.Len(t, na.Nodes, 5)
	for _, n := range na.Nodes {
		require.Equal(t, redlock.NodeFailed, n.Status, "node %d", n.Node)
		require.ErrorIs(t, n.Err, mux.ErrAuth, "node %d", n.Node)
		require.Equal(t, cl.Addrs()[n.Node], n.Addr)
	}
	msg := err.Error()
	require.Contains(t, msg, "WRONGPASS")
	require.NotContains(t, msg, testPassword)
	require.Less(t, el, 2*time.Second, "generous: 32 tries would take at least 1.6 s of retry delays")
	t.Log(msg)

	// No password at all: NOAUTH.
	c2 := newClient(t, cl.Addrs())
	_, err = c2.TryAcquire(context.Background(), "auth")
	require.ErrorIs(t, err, mux.ErrAuth)
	require.Contains(t, err.Error(), "NOAUTH")
	require.Contains(t, err.Error(), "requires a password and none was given")
	require.NotContains(t, err.Error(), testPassword)
}

// freeAddrs returns n loopback addresses nothing listens on.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		require.NoError(t, l.Close())
	}
	return out
}

// Every node refusing connections: one attempt, and the error names the
// cause.
func TestErrorAllNodesRefuse(t *testing.T) {
	c := newClient(t, freeAddrs(t, 5))
	start := time.Now()
	_, err := c.Acquire(context.Background(), "refused")
	el := time.Since(start)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, redlock.ErrUnreachable)
	require.ErrorIs(t, err, mux.ErrNodeDown)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Tries)
	require.Contains(t, err.Error(), "connection refused")
	require.Less(t, el, 2*time.Second)
	t.Log(err)
}

// A majority down fails at the first attempt, well within two node
// timeouts' worth of work (no retry delays); a minority down still
// acquires, and a majority timing out (blackholed) is retried (it may come
// back), as contention is.
func TestErrorMajorityDownFailsFast(t *testing.T) {
	cl := startCluster(t, 5)
	c := newClient(t, cl.Addrs(), redlock.WithNodeTimeout(100*time.Millisecond))
	warm(t, c)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Down()
	}
	// the connections notice the drop at once; let mux mark the nodes down
	eventually(t, 2*time.Second, func() bool {
		_, err := c.TryAcquire(ctx, "probe")
		return errors.Is(err, mux.ErrNodeDown)
	}, "nodes never reported down")
	start := time.Now()
	_, err := c.Acquire(ctx, "maj")
	el := time.Since(start)
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 1, na.Tries, "no retries when a majority is down: %v", err)
	require.ErrorIs(t, err, redlock.ErrUnreachable)
	require.ErrorIs(t, err, mux.ErrNodeDown)
	down := 0
	for _, n := range na.Nodes {
		if n.Status == redlock.NodeFailed && errors.Is(n.Err, mux.ErrNodeDown) {
			down++
		}
	}
	require.Equal(t, 3, down)
	require.Less(t, el, time.Second, "generous bound; the retries alone would take 1.6 s or more")
	t.Logf("%v after %v", err, el)

	// Contention is retried: not ErrUnreachable.
	for i := 0; i < 3; i++ {
		cl.Nodes[i].Up()
	}
	c = newClient(t, cl.Addrs()) // connected to all five at once
	l, err := c.Acquire(ctx, "busy")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	_, err = c.Acquire(ctx, "busy", redlock.WithTries(3), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	require.ErrorAs(t, err, &na)
	require.Equal(t, 3, na.Tries)
	require.NotErrorIs(t, err, redlock.ErrUnreachable)
	refused := 0
	for _, n := range na.Nodes {
		switch n.Status {
		case redlock.NodeRefused:
			refused++
			require.NoError(t, n.Err)
		case redlock.NodePending: // not awaited once the quorum was impossible
			require.ErrorIs(t, n.Err, mux.ErrPending)
		default:
			t.Fatalf("node %d: %v", n.Node, n)
		}
	}
	require.GreaterOrEqual(t, refused, 3)
}

// One prefix rule: "redlock: " once at the start of every message; a
// cause from this package is added without it, a cause from mux keeps its
// own "mux: " (it says where the error came from), never both for one
// fact.
func TestErrorPrefixOnce(t *testing.T) {
	cl := startCluster(t, 3)
	c, err := redlock.New(cl.Addrs())
	require.NoError(t, err)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "p", redlock.WithTTL(20*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(40 * time.Millisecond)
	var msgs []string
	rerr := l.Release(ctx)
	require.ErrorIs(t, rerr, redlock.ErrLockExpired)
	msgs = append(msgs, rerr.Error())
	l2, err := c.Acquire(ctx, "q")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.Acquire(ctx, "p2")
	require.ErrorIs(t, err, redlock.ErrClosed)
	msgs = append(msgs, err.Error())
	err = l2.Extend(ctx, time.Second)
	require.ErrorIs(t, err, redlock.ErrClosed)
	msgs = append(msgs, err.Error())
	for _, m := range msgs {
		require.True(t, strings.HasPrefix(m, "redlock: "), "%q", m)
		require.Equal(t, 1, strings.Count(m, "redlock: "), "%q", m)
		require.NotContains(t, m, "mux: client closed", "%q: one fact, one message", m)
	}
}

// WithFailFast(false): a majority down is retried like any failure, and
// still reported as unreachable.
func TestErrorFailFastOff(t *testing.T) {
	c := newClient(t, freeAddrs(t, 3))
	_, err := c.Acquire(context.Background(), "ff", redlock.WithFailFast(false), redlock.WithTries(3),
		redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond))
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Equal(t, 3, na.Tries)
	require.ErrorIs(t, err, redlock.ErrUnreachable)
	require.Contains(t, err.Error(), "connection refused")
}

// TestNodeAddrRedacted: a node address given as a URL with a password
// appears in NotAcquiredError's per-node results and in Inspect without
// it.
func TestNodeAddrRedacted(t *testing.T) {
	var addr [3]string // three servers: one listed twice is refused
	for i := range addr {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr[i] = ln.Addr().String()
		require.NoError(t, ln.Close()) // nothing listens: every node is down
	}
	c, err := redlock.New([]string{"redis://user:hunter2@" + addr[0], "redis://:hunter2@" + addr[1], "rediss://:hunter2@" + addr[2]},
		redlock.WithMuxConfig(mux.Config{DialTimeout: 100 * time.Millisecond}))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.TryAcquire(context.Background(), "r")
	var na *redlock.NotAcquiredError
	require.ErrorAs(t, err, &na)
	require.Len(t, na.Nodes, 3)
	for i, n := range na.Nodes {
		require.NotContains(t, n.Addr, "hunter2")
		require.Contains(t, n.Addr, addr[i])
	}
	require.NotContains(t, err.Error(), "hunter2")
	in, _ := c.Inspect(context.Background(), "r")
	for _, h := range in.Nodes {
		require.NotContains(t, h.Addr, "hunter2")
	}
}
