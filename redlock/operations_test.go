package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
)

// incEvents records OpIncarnation events.
type incEvents struct {
	mu  sync.Mutex
	evs []redlock.Event
}

func (o *incEvents) Observe(e redlock.Event) {
	if e.Op != redlock.OpIncarnation {
		return
	}
	o.mu.Lock()
	o.evs = append(o.evs, e)
	o.mu.Unlock()
}

func (o *incEvents) causes(node int) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []error
	for _, e := range o.evs {
		var qe *redlock.QuarantineError
		if e.Node == node && errors.As(e.Err, &qe) {
			out = append(out, qe.Cause)
		}
	}
	return out
}

// The first repro, on the fake: A holds a lock; 3 of 5 nodes
// restart losing their data, back at once. A client started afterwards
// must not get the lock while A's validity lasts: the restarted nodes
// report uptimes below the quarantine, so their grants do not count. A
// client that declares (falsely) that the nodes persist every write does
// get it: two holders, which is what the quarantine prevents.
func TestQuarantineUndelayedRestart(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	obs := &incEvents{}
	a := newClient(t, addrs, redlock.WithTTL(20*time.Second), redlock.WithObserver(obs))
	la, err := a.Acquire(ctx, "restarted")
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].Restart(true, 0))
	}

	b := newClient(t, addrs, redlock.WithTTL(20*time.Second))
	_, err = b.TryAcquire(ctx, "restarted")
	var ne *redlock.NotAcquiredError
	require.ErrorAs(t, err, &ne, "a second holder while A's validity is %v", la.Validity())
	require.Positive(t, ne.Quarantined, "%v", err) // the call may end before all three answered
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	require.ErrorIs(t, err, redlock.ErrNodeRestarted)
	require.Contains(t, err.Error(), "quarantined after restart")
	require.Positive(t, la.Validity())
	q := b.Quarantined()
	require.Len(t, q, 3, "%v", q)
	for i := 0; i < 3; i++ {
		require.Greater(t, q[i], 15*time.Second, "node %d: the quarantine is the TTL from the restart", i)
	}

	// The control: without the quarantine the restart hands out the lock
	// again while A is still valid.
	c := newClient(t, addrs, redlock.WithTTL(20*time.Second), redlock.WithNodesPersistEveryWrite())
	lc, err := c.TryAcquire(ctx, "restarted")
	require.NoError(t, err, "the control should show the restart's hazard")
	require.Positive(t, la.Validity(), "two holders at once: the hazard quarantine removes")
	require.NoError(t, lc.Release(ctx))

	// A, connected through the restarts, sees them too: its own
	// extension cannot count the restarted nodes either.
	eventually(t, 10*time.Second, func() bool { return len(a.Quarantined()) == 3 }, "A never judged the restarts: %v", a.Quarantined())
	for i := 0; i < 3; i++ {
		require.Contains(t, obs.causes(i), redlock.ErrNodeRestarted, "node %d", i)
	}
	err = la.Extend(ctx, 20*time.Second)
	require.Error(t, err, "an extension counted quarantined nodes")
}

// A node first seen freshly started is quarantined for the rest of the
// quarantine after its start; WithTrustNodesAtStart trusts it; a node
// with a long uptime is trusted at once.
func TestQuarantineFirstSight(t *testing.T) {
	fresh, err := fakeserver.StartCluster(3, fakeserver.Config{StartUptime: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close() })
	ctx := context.Background()
	c := newClient(t, fresh.Addrs(), redlock.WithTTL(time.Minute))
	_, err = c.TryAcquire(ctx, "fresh")
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	require.Len(t, c.Quarantined(), 3)

	s := newClient(t, fresh.Addrs(), redlock.WithTTL(time.Minute), redlock.WithTrustNodesAtStart())
	l, err := s.TryAcquire(ctx, "fresh")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	// a short quarantine ends by itself
	q := newClient(t, fresh.Addrs(), redlock.WithTTL(time.Minute), redlock.WithQuarantine(300*time.Millisecond),
		redlock.WithTries(1000), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
	l, err = q.Acquire(ctx, "fresh")
	require.NoError(t, err, "the quarantine never ended")
	require.NoError(t, l.Release(ctx))
	require.Empty(t, q.Quarantined())

	_, err = redlock.New(fresh.Addrs(), redlock.WithQuarantine(0))
	require.ErrorIs(t, err, redlock.ErrBadOption)

	long := startCluster(t, 3) // the fake's default: started an hour ago
	l, err = newClient(t, long.Addrs()).TryAcquire(ctx, "old")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// A failover (a promoted replica that lacks the last writes) is
// quarantined for clients that saw it, also when they declare that the
// nodes persist every write (the disk does not have writes the replica
// never got).
func TestQuarantineFailover(t *testing.T) {
	cl := startCluster(t, 5)
	obs := &incEvents{}
	a := newClient(t, cl.Addrs(), redlock.WithTTL(10*time.Second), redlock.WithObserver(obs), redlock.WithNodesPersistEveryWrite())
	warm(t, a)
	require.NoError(t, cl.Nodes[4].Failover(100*time.Millisecond, 0))
	require.NoError(t, cl.Nodes[3].Restart(false, 0)) // kept its data: trusted with the declaration
	eventually(t, 10*time.Second, func() bool {
		q := a.Quarantined()
		return len(obs.causes(3)) > 0 && len(q) == 1 && q[4] > 5*time.Second
	}, "the failover was not quarantined (or the restart was): %v", a.Quarantined())
	require.Contains(t, obs.causes(4), redlock.ErrNodeFailover)
	require.Equal(t, []error{redlock.ErrNodeRestarted}, obs.causes(3))

	// A client that first sees the promoted node (and the restarted one)
	// after the fact: the promoted one is judged by its uptime, as without
	// the declaration (persistence lifts restarts' quarantine only); the
	// restarted one is trusted.
	b := newClient(t, cl.Addrs(), redlock.WithTTL(10*time.Second), redlock.WithNodesPersistEveryWrite())
	warm(t, b)
	q := b.Quarantined()
	require.Contains(t, q, 4, "a promoted node first seen under WithNodesPersistEveryWrite counted at once")
	require.NotContains(t, q, 3)
}

// The second repro, on the fake: a lock kept alive with a 1.5 s
// TTL through a one-at-a-time restart of all 5 nodes, each losing its
// data and down 2 s. Extensions put the key back on the restarted nodes,
// so the lock never drops below a quorum of holders. (The issue measured
// 500 ms and 800 ms; CI beside other work lost a 500 ms lock to a late
// extension, so every figure here is scaled up. Each node stays down
// longer than the quarantine, the TTL, as OPERATIONS.md asks of a
// rolling restart: else two restarted nodes are quarantined while a
// third is down, and two grants are no quorum.)
func TestKeepAliveSurvivesRollingRestart(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	c := newClient(t, addrs, redlock.WithTTL(1500*time.Millisecond), redlock.WithNodeTimeout(150*time.Millisecond))
	l, err := c.Acquire(ctx, "rolling")
	require.NoError(t, err)
	kctx, err := l.KeepAlive(ctx)
	require.NoError(t, err)
	for i := range cl.Nodes {
		require.NoError(t, cl.Nodes[i].Restart(true, 2*time.Second))
		require.NoError(t, kctx.Err(), "lost after restarting node %d: %v", i, context.Cause(kctx))
	}
	// the last node back, its key restored within a few extensions
	eventually(t, 10*time.Second, func() bool { return count(holders(t, addrs, "rolling", l.Value())) == 5 },
		"the keys were not put back: %v", holders(t, addrs, "rolling", l.Value()))
	require.NoError(t, kctx.Err(), "%v", context.Cause(kctx))
	// Every node lost its data, so every key above was put back by a
	// restore. Restored counts the restores confirmed within the node
	// timeout: beside two CPU burners one reply came later (4 of 5), so
	// only "some" is required of the counter.
	require.Positive(t, c.Restored())
	t.Logf("%d restores confirmed", c.Restored())
	require.NoError(t, l.Release(ctx))
	require.Zero(t, count(holders(t, addrs, "rolling", l.Value())))
}

// A restore never overwrites another value, and a failed extension
// restores nothing.
func TestRestoreOnlyWhereAbsent(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	c := newClient(t, addrs, redlock.WithTTL(5*time.Second))
	l, err := c.Acquire(ctx, "restore")
	require.NoError(t, err)
	waitAllHold(t, addrs, "restore", l)
	rawDo(t, addrs[0], "DEL", "restore")
	rawDo(t, addrs[1], "SET", "restore", "someone-else")
	// restored by an extension that has node 0's answer in hand when it
	// succeeds (not always the first: the call returns at the quorum)
	eventually(t, 10*time.Second, func() bool {
		require.NoError(t, l.Extend(ctx, 5*time.Second))
		return holders(t, addrs, "restore", l.Value())[0]
	}, "node 0 not restored")
	require.Equal(t, "someone-else", string(rawDo(t, addrs[1], "GET", "restore").Data))

	// lost on 3 nodes: the extension fails and puts nothing back
	for i := 0; i < 3; i++ {
		rawDo(t, addrs[i], "DEL", "restore")
	}
	require.ErrorIs(t, l.Extend(ctx, 5*time.Second), redlock.ErrLockLost)
	time.Sleep(50 * time.Millisecond)
	h := holders(t, addrs, "restore", l.Value())
	require.False(t, h[0] || h[1] || h[2], "a failed extension re-created keys: %v", h)
}

// Rotating one-node outages on the fake: each node in turn is blackholed
// (requests held, run when it heals) for 2.4 s, longer than the 2 s TTL,
// so its key expires there while the others extend. Before the restores
// every keep-alive ended at the third node; now the key is put back on
// each node once it answers again. The lock is extended every 400 ms (a
// fifth of the TTL): a key is put back by an extension that has the
// healed node's "0" in hand when it reaches its quorum (docs/OPERATIONS.md,
// rule 3; the reply of one node of four often comes after the quorum), so
// the healed node must be restored by one of the extensions before the
// next node's outage ends: six chances here, where at the default half TTL
// two chances both missed in about 1 run of 10. (The issue measured a
// 500 ms TTL and 800 ms outages; CI lost that lock once.)
func TestKeepAliveSurvivesRotatingBlackholes(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	c := newClient(t, addrs, redlock.WithTTL(2*time.Second), redlock.WithNodeTimeout(200*time.Millisecond))
	l, err := c.Acquire(ctx, "rotating")
	require.NoError(t, err)
	kctx, err := l.KeepAlive(ctx, redlock.KeepAliveFraction(0.2))
	require.NoError(t, err)
	for round := 0; round < 2; round++ {
		for i, n := range cl.Nodes {
			n.Blackhole()
			time.Sleep(2400 * time.Millisecond)
			n.Heal()
			require.NoError(t, kctx.Err(), "lost while node %d was away (round %d): %v", i, round, context.Cause(kctx))
		}
	}
	require.Positive(t, c.Restored())
	require.NoError(t, l.Release(ctx))
}
