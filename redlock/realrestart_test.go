package redlock_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
)

// realRuns is how many times the real-restart tests repeat their
// scenario: 1 in make test, REDMUX_REAL_RUNS for the figures in
// results/operations (10).
func realRuns(t *testing.T) int {
	if v := os.Getenv("REDMUX_REAL_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "REDMUX_REAL_RUNS")
		return n
	}
	return 1
}

// restartReal stops srv[i] (by its pid), keeps it down for down, and
// starts a new redis-server on the same port, without persistence: an
// undelayed restart that loses every key. The new server is stopped when
// t ends.
func restartReal(t *testing.T, srv []*redisproc.Server, i int, down time.Duration) {
	t.Helper()
	port := srv[i].Port
	srv[i].Stop()
	time.Sleep(down)
	srv[i] = redistest.Start(t, redistest.Options{Port: port})
}

// The first repro against real redis-servers: A holds a 30 s lock;
// nodes 0, 1, 2 are restarted one at a time, each down 300 ms, losing
// their data. A client started afterwards must not acquire the lock while
// A's validity lasts (before the quarantine: two holders in 3 of 3 runs).
// The restarts really lost A's keys: nodes 0-2 no longer hold them.
func TestRealRestartUndelayed(t *testing.T) {
	for run := 0; run < realRuns(t); run++ {
		srv := redistest.StartN(t, 5, redistest.Options{})
		addrs := redistest.Addrs(srv)
		ctx := context.Background()
		a := newClient(t, addrs, redlock.WithTTL(30*time.Second), redlock.WithTrustNodesAtStart())
		la, err := a.Acquire(ctx, "real:restart")
		require.NoError(t, err)
		waitAllHold(t, addrs, "real:restart", la)
		for i := 0; i < 3; i++ {
			restartReal(t, srv, i, 300*time.Millisecond)
		}
		require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "real:restart", la.Value()),
			"run %d: the restarts did not lose A's keys", run)
		b := newClient(t, addrs, redlock.WithTTL(30*time.Second),
			redlock.WithTries(20), redlock.WithRetryDelay(20*time.Millisecond, 40*time.Millisecond))
		_, err = b.Acquire(ctx, "real:restart")
		require.ErrorIs(t, err, redlock.ErrQuarantined, "run %d: a second holder while A's validity is %v", run, la.Validity())
		require.Greater(t, la.Validity(), 20*time.Second)
		t.Logf("run %d: B refused while A's validity is %v: %v", run, la.Validity().Round(time.Millisecond), err)
		redisproc.StopAll(srv)
	}
}

// The second repro against real redis-servers: a lock kept alive
// with a 1.5 s TTL through a one-at-a-time restart of all 5 nodes, each
// down 2 s (longer than the quarantine, the TTL) and back without its
// data. The issue measured 500 ms and 800 ms (before the restores: lost at
// the third node in every run); the test scales both up so that a loaded
// CI machine's late extension does not end the lock.
func TestRealRestartRollingKeepAlive(t *testing.T) {
	for run := 0; run < realRuns(t); run++ {
		srv := redistest.StartN(t, 5, redistest.Options{})
		addrs := redistest.Addrs(srv)
		ctx := context.Background()
		c := newClient(t, addrs, redlock.WithTTL(1500*time.Millisecond), redlock.WithTrustNodesAtStart(),
			redlock.WithNodeTimeout(150*time.Millisecond))
		l, err := c.Acquire(ctx, "real:rolling")
		require.NoError(t, err)
		kctx, err := l.KeepAlive(ctx)
		require.NoError(t, err)
		start := time.Now()
		for i := range srv {
			before := holders(t, addrs, "real:rolling", l.Value())
			restartReal(t, srv, i, 2*time.Second)
			require.NoError(t, kctx.Err(), "run %d: lost after restarting node %d (holders before its stop %v, now %v, quarantined %v): %v",
				run, i, before, holders(t, addrs, "real:rolling", l.Value()), c.Quarantined(), context.Cause(kctx))
		}
		eventually(t, 10*time.Second, func() bool { return count(holders(t, addrs, "real:rolling", l.Value())) == 5 },
			"run %d: the keys were not put back", run)
		require.NoError(t, kctx.Err(), "run %d: %v", run, context.Cause(kctx))
		t.Logf("run %d: held through 5 restarts in %v, %d keys restored, validity %v", run,
			time.Since(start).Round(time.Millisecond), c.Restored(), l.Validity().Round(time.Millisecond))
		require.NoError(t, l.Release(ctx))
		redisproc.StopAll(srv)
	}
}

// A node whose ACL refuses INFO has an unknown incarnation: set up all the
// same and reported to the observer. Each of its set-ups may be a new
// process's (a restart from an older snapshot keeps the data-set marker):
// quarantined from that set-up, every time, but the one New saw under
// WithTrustNodesAtStart. A node that told its incarnation and then stops
// (the ACL changed, the connection was replaced) is quarantined too.
func TestRealIncarnationUnknown(t *testing.T) {
	srv := redistest.StartN(t, 3, redistest.Options{})
	addrs := make([]string, len(srv))
	for i, s := range srv {
		rawDo(t, s.Addr, "ACL", "SETUSER", "app", "on", ">app-pw", "~*", "+@all")
		addrs[i] = "redis://app:app-pw@" + s.Addr
	}
	ctx := context.Background()
	obs := &incEvents{}
	c := newClient(t, addrs, redlock.WithTTL(time.Minute), redlock.WithTrustNodesAtStart(), redlock.WithObserver(obs))
	l, err := c.TryAcquire(ctx, "real:acl")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.Empty(t, obs.causes(0))

	// node 0 now refuses INFO to this user, and drops its connections
	rawDo(t, srv[0].Addr, "ACL", "SETUSER", "app", "-info")
	rawDo(t, srv[0].Addr, "CLIENT", "KILL", "USER", "app")
	eventually(t, 10*time.Second, func() bool {
		_ = c.Quarantined()
		return len(obs.causes(0)) > 0
	}, "the refused INFO was not judged")
	require.Equal(t, []error{redlock.ErrIncarnationUnknown}, obs.causes(0))
	require.Contains(t, c.Quarantined(), 0, "a node that stopped telling its incarnation is quarantined")

	// its connections set up again twice, still without INFO: each set-up
	// may be a restart's, and is quarantined (and said)
	for k := 0; k < 2; k++ {
		before := clientIDs(t, srv[0].Addr)
		rawDo(t, srv[0].Addr, "CLIENT", "KILL", "USER", "app")
		eventually(t, 10*time.Second, func() bool {
			_ = c.Quarantined()
			now := clientIDs(t, srv[0].Addr)
			return len(now) > 0 && !slices.ContainsFunc(now, func(id string) bool { return slices.Contains(before, id) })
		}, "node 0's connections were not set up again")
		eventually(t, 10*time.Second, func() bool {
			_ = c.Quarantined() // judges the new incarnation
			return len(obs.causes(0)) >= k+2
		}, "set-up %d without INFO was not judged", k+1)
		require.Contains(t, c.Quarantined(), 0)
	}
	require.GreaterOrEqual(t, len(obs.causes(0)), 3)
	for _, e := range obs.causes(0) {
		require.ErrorIs(t, e, redlock.ErrIncarnationUnknown)
	}

	// a new client under WithTrustNodesAtStart trusts node 0 as New saw it
	d := newClient(t, addrs, redlock.WithTTL(time.Minute), redlock.WithTrustNodesAtStart())
	l, err = d.TryAcquire(ctx, "real:acl2")
	require.NoError(t, err, "an unknown incarnation New saw, under WithTrustNodesAtStart, blocked the lock")
	require.NoError(t, l.Release(ctx))
	require.Empty(t, d.Quarantined())
	// one without it quarantines node 0 from its first set-up
	e := newClient(t, addrs, redlock.WithTTL(time.Minute))
	require.Contains(t, e.Quarantined(), 0, "an unknown incarnation at first sight was trusted")
}

// clientIDs returns the ids of user app's connections to addr.
func clientIDs(t *testing.T, addr string) []string {
	t.Helper()
	v := rawDo(t, addr, "CLIENT", "LIST")
	var ids []string
	for _, line := range strings.Split(string(v.Data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "id=") && slices.Contains(f, "user=app") {
			ids = append(ids, f[0])
		}
	}
	return ids
}
