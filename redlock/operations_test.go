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
	"github.com/redmux/redmux/redlock/scripts"
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
// report uptimes below the quarantine (rule 2), and their data sets have
// no marker (rule 4), so their grants do not count. The restarts did lose
// A's keys: only the quarantine stands between B and a second holding.
func TestQuarantineUndelayedRestart(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	obs := &incEvents{}
	a := newClient(t, addrs, redlock.WithTTL(20*time.Second), redlock.WithObserver(obs))
	la, err := a.Acquire(ctx, "restarted")
	require.NoError(t, err)
	waitAllHold(t, addrs, "restarted", la)
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].Restart(true, 0))
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "restarted", la.Value()),
		"the restarts lost A's keys: without the quarantine a majority is free")

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

	// A, connected through the restarts, sees them too; its extension
	// finds its key on 2 nodes only: the lock is lost, and nothing is put
	// back (a failed extension restores nothing).
	eventually(t, 10*time.Second, func() bool { return len(a.Quarantined()) == 3 }, "A never judged the restarts: %v", a.Quarantined())
	for i := 0; i < 3; i++ {
		require.Contains(t, obs.causes(i), redlock.ErrNodeRestarted, "node %d", i)
	}
	err = la.Extend(ctx, 20*time.Second)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.Zero(t, a.Restored())
}

// A node first seen freshly started, without a data-set marker, is
// quarantined for the quarantine period; WithTrustNodesAtStart trusts it;
// a node in service (a long uptime, a marker) is trusted at once.
func TestQuarantineFirstSight(t *testing.T) {
	fresh, err := fakeserver.StartCluster(3, fakeserver.Config{StartUptime: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close() })
	ctx := context.Background()
	c := newClient(t, fresh.Addrs(), redlock.WithTTL(time.Minute))
	_, err = c.TryAcquire(ctx, "fresh")
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	require.Len(t, c.Quarantined(), 3)

	// trusted as New finds them, markers, young keys (c's) and all, for
	// this client only: c still waits
	s := newClient(t, fresh.Addrs(), redlock.WithTTL(time.Minute), redlock.WithTrustNodesAtStart())
	l, err := s.TryAcquire(ctx, "fresh")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	_, err = c.TryAcquire(ctx, "fresh")
	require.ErrorIs(t, err, redlock.ErrQuarantined)

	// on nodes of their own, a short TTL's quarantine ends by itself
	short, err := fakeserver.StartCluster(3, fakeserver.Config{StartUptime: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = short.Close() })
	q := newClient(t, short.Addrs(), redlock.WithTTL(200*time.Millisecond), redlock.WithQuarantine(300*time.Millisecond),
		redlock.WithTries(1000), redlock.WithRetryDelay(10*time.Millisecond, 20*time.Millisecond))
	l, err = q.Acquire(ctx, "fresh")
	require.NoError(t, err, "the quarantine never ended")
	require.NoError(t, l.Release(ctx))
	// a node whose young key's end this client timed from its side may
	// say so a little longer than the node, until its next answer
	eventually(t, 2*time.Second, func() bool { return len(q.Quarantined()) == 0 }, "quarantined: %v", q.Quarantined())

	_, err = redlock.New(fresh.Addrs(), redlock.WithQuarantine(0))
	require.ErrorIs(t, err, redlock.ErrBadOption)
	_, err = redlock.New(fresh.Addrs(), redlock.WithTTL(30*time.Second), redlock.WithQuarantine(time.Second))
	require.ErrorIs(t, err, redlock.ErrBadOption, "a quarantine below the client's own TTL")

	long := startCluster(t, 3) // the fake's default: started an hour ago; and a marker
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

// waitSecondBoundary waits until the wall clock's second is no longer
// the one of t: a process started at t then reports uptime_in_seconds 1
// however young it is (Redis rounds both stamps down).
func waitSecondBoundary(t time.Time) {
	for time.Now().Unix() == t.Unix() {
		time.Sleep(time.Millisecond)
	}
}

// waitLateInSecond waits until the wall clock is in the last 5% of a
// second (a restart then soon crosses a second boundary).
func waitLateInSecond() {
	for time.Now().Nanosecond() < 940_000_000 || time.Now().Nanosecond() > 980_000_000 {
		time.Sleep(time.Millisecond)
	}
}

// Uptime's rounding (docs/OPERATIONS.md, rule 2): three nodes restart from
// an older snapshot (A's key lost, their markers kept: only INFO tells) at
// wall .95, and a new client looks 20-70 ms later, once the second has
// turned: the nodes say uptime 1 s while tens of ms old. Trusted from
// seen - uptime, they would count at once and hand A's lock out again.
func TestQuarantineUptimeRounding(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond) // the markers are older than the writes lost below
	a := newClient(t, addrs, redlock.WithTTL(800*time.Millisecond))
	waitLateInSecond()
	la, err := a.Acquire(ctx, "rounded")
	require.NoError(t, err)
	waitAllHold(t, addrs, "rounded", la)
	restarted := time.Now()
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].RestartLag(200*time.Millisecond))
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "rounded", la.Value()), "A's keys were lost")
	waitSecondBoundary(restarted)
	b := newClient(t, addrs, redlock.WithTTL(800*time.Millisecond))
	_, err = b.TryAcquire(ctx, "rounded")
	require.ErrorIs(t, err, redlock.ErrQuarantined, "a second holder while A's validity is %v (the restarted nodes counted by their rounded uptime)", la.Validity())
	require.Positive(t, la.Validity())
}

// WithTrustNodesAtStart trusts what New saw, not what the client meets at
// its first operation (issue 44): a client made before restarts that
// keep the markers (older snapshots) and first used after them
// quarantines the restarted nodes.
func TestTrustAtStartOnlyWhatNewSaw(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond) // the markers are older than the writes lost below
	c := newClient(t, addrs, redlock.WithTTL(5*time.Second), redlock.WithTrustNodesAtStart())
	a := newClient(t, addrs, redlock.WithTTL(5*time.Second))
	la, err := a.Acquire(ctx, "at-start")
	require.NoError(t, err)
	waitAllHold(t, addrs, "at-start", la)
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].RestartLag(200*time.Millisecond))
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "at-start", la.Value()), "A's keys were lost")
	// c's first operation comes after its connections were set up again
	// with the new processes (redials back off 250 ms at most): what it
	// meets first is not what New saw
	time.Sleep(time.Second)
	eventually(t, 5*time.Second, func() bool {
		_, err = c.TryAcquire(ctx, "at-start")
		return !errors.Is(err, redlock.ErrUnreachable) // c reconnected to the restarted nodes
	}, "c did not reconnect: %v", err)
	require.ErrorIs(t, err, redlock.ErrQuarantined, "trusted the restarted nodes as if New had seen them")
	require.ErrorIs(t, err, redlock.ErrNodeRestarted)
}

// A data set copied from a sibling node (REPLICAOF it, then REPLICAOF NO
// ONE: fakeserver's Resync) carries the sibling's marker: a client that
// knew the node sees another id, a new client sees one id on two nodes,
// and neither counts the copy (docs/OPERATIONS.md, rule 4). A holds its
// lock on nodes 1-3 (0 and 4 were down); node 1 becomes a copy of node 0,
// which never had A's key. On nodes that refuse CLIENT TRACKING the
// markers alone tell; on nodes that tell of their flushes, the resync's
// flush tells the client that knew node 1 too.
func TestMarkerCopiedDataSet(t *testing.T) {
	for _, watch := range []bool{false, true} {
		name := map[bool]string{false: "markers-alone", true: "flush-watch"}[watch]
		t.Run(name, func(t *testing.T) {
			cl := startClusterWith(t, 5, fakeserver.Config{RefuseTracking: !watch})
			addrs := cl.Addrs()
			ctx := context.Background()
			known := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			warm(t, known)
			cl.Nodes[0].Down()
			cl.Nodes[4].Down()
			a := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			la, err := a.Acquire(ctx, "copied")
			require.NoError(t, err)
			cl.Nodes[0].Up()
			cl.Nodes[4].Up()
			cl.Nodes[1].Resync(cl.Nodes[0])
			require.Equal(t, []bool{false, false, true, true, false}, holders(t, addrs, "copied", la.Value()), "node 1 lost A's key in the copy")

			fresh := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			for name, c := range map[string]*redlock.Client{"a client that knew node 1": known, "a new client": fresh} {
				eventually(t, 5*time.Second, func() bool {
					_, err = c.TryAcquire(ctx, "copied")
					return !errors.Is(err, redlock.ErrUnreachable) // nodes 0 and 4 reconnected
				}, "%s: nodes 0 and 4 did not come back: %v", name, err)
				require.ErrorIs(t, err, redlock.ErrNotAcquired, "%s: a second holder while A's validity is %v", name, la.Validity())
				require.Positive(t, la.Validity())
			}
		})
	}
}

// A wipe without a restart (docs/OPERATIONS.md, rule 4): A holds a lock;
// nodes 0-2 lose their data and keep every connection (FLUSHALL; a full
// resync from an empty server), so INFO is not read again. A client
// connected throughout and a new one retry for half a second: every
// attempt is refused. On nodes that refuse CLIENT TRACKING (an ACL, a
// proxy) by the markers (gone, then young) alone; on nodes that tell of
// their flushes, by both witnesses.
func TestQuarantineWipeWithoutRestart(t *testing.T) {
	for _, tc := range []struct {
		wipe  string
		watch bool
	}{{"flush", false}, {"resync", false}, {"flush", true}, {"resync", true}} {
		wipe := tc.wipe
		name := wipe + "/markers-alone"
		if tc.watch {
			name = wipe + "/flush-watch"
		}
		t.Run(name, func(t *testing.T) {
			cl := startClusterWith(t, 5, fakeserver.Config{RefuseTracking: !tc.watch})
			addrs := cl.Addrs()
			ctx := context.Background()
			a := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			b := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			warm(t, b)
			la, err := a.Acquire(ctx, "wiped")
			require.NoError(t, err)
			waitAllHold(t, addrs, "wiped", la)
			for i := 0; i < 3; i++ {
				if wipe == "flush" {
					cl.Nodes[i].Flush()
				} else {
					cl.Nodes[i].Resync(nil)
				}
			}
			require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "wiped", la.Value()), "A's keys were wiped")
			fresh := newClient(t, addrs, redlock.WithTTL(10*time.Second))
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				for name, c := range map[string]*redlock.Client{"the connected client": b, "a new client": fresh} {
					if _, err := c.TryAcquire(ctx, "wiped"); err == nil {
						t.Fatalf("%s took A's lock (validity %v) on nodes wiped without a restart", name, la.Validity())
					}
				}
			}
			for name, c := range map[string]*redlock.Client{"the connected client": b, "a new client": fresh} {
				q := c.Quarantined()
				for i := 0; i < 3; i++ {
					require.Contains(t, q, i, "%s: node %d", name, i)
				}
			}
		})
	}
}

// A restart from an older snapshot (docs/OPERATIONS.md, rule 2): nodes
// 0-2 restart keeping their markers but losing A's keys (written after
// their last snapshot), so only the new run_id tells. A client connected
// throughout and a new one are refused.
func TestQuarantineRestartKeepsMarker(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	time.Sleep(300 * time.Millisecond) // the markers are older than the writes lost below
	a := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	b := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	warm(t, b)
	la, err := a.Acquire(ctx, "snapshot")
	require.NoError(t, err)
	waitAllHold(t, addrs, "snapshot", la)
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].RestartLag(200*time.Millisecond))
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "snapshot", la.Value()), "A's keys were lost")
	fresh := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	for name, c := range map[string]*redlock.Client{"the connected client": b, "a new client": fresh} {
		var err error
		eventually(t, 5*time.Second, func() bool {
			_, err = c.TryAcquire(ctx, "snapshot")
			return !errors.Is(err, redlock.ErrUnreachable)
		}, "%s: the nodes did not come back: %v", name, err)
		require.ErrorIs(t, err, redlock.ErrQuarantined, "%s: a second holder while A's validity is %v", name, la.Validity())
	}
}

// A lock script resent after NOSCRIPT (mux's EVAL fallback) runs after
// the data-set marker's MGET that followed it in the pipeline: that MGET
// is no evidence read after the grant (docs/OPERATIONS.md, rule 4), so
// the node does not count in that attempt. The fallback loads the script
// again: the next attempt counts it.
func TestNoScriptResentNotCounted(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	c := newClient(t, addrs, redlock.WithTTL(2*time.Second))
	warm(t, c)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		rawDo(t, addrs[i], "SCRIPT", "FLUSH")
	}
	_, err := c.TryAcquireMulti(ctx, []string{"ns:a", "ns:b"})
	var ne *redlock.NotAcquiredError
	require.ErrorAs(t, err, &ne, "the resent scripts' nodes counted")
	require.LessOrEqual(t, ne.Granted, 2)
	// The failed attempt's release meets NOSCRIPT on the flushed nodes
	// too. It is sent without waiting (quorum 1): when that reply comes
	// after the release was decided, the batch is its caller's again and
	// nothing resends it, so the keys stay there until their TTL (on a
	// loaded machine the next attempt then found 3 nodes refusing). Wait
	// for them to go.
	eventually(t, 10*time.Second, func() bool {
		for _, a := range addrs {
			if n, _ := rawDo(t, a, "EXISTS", "ns:a", "ns:b").Int(); n != 0 {
				return false
			}
		}
		return true
	}, "the failed attempt's keys were not released")
	l, err := c.TryAcquireMulti(ctx, []string{"ns:a", "ns:b"})
	require.NoError(t, err, "the scripts were loaded again")
	require.NoError(t, l.Release(ctx))
}

// Rule 5: a node that missed a TTL declaration (down while the client
// declared a longer TTL) has its record raised by the client's next
// grants that read it, although its MGET reply is byte for byte the one
// the grants judged steady before the declaration: the grant's memo
// compares the record it was judged for (mutant memo-want-unchecked).
func TestRecordRaisedAfterMissedDeclaration(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	c := newClient(t, addrs, redlock.WithTTL(time.Second))
	warm(t, c) // its grants judged the nodes' MGETs steady: record 1000
	_, _, tk := scripts.MarkerKeys("")
	record := func(i int) string {
		v, _ := cl.Nodes[i].Get(tk)
		return string(v)
	}
	require.Equal(t, "1000", record(4))
	cl.Nodes[4].Down()
	l, err := c.Acquire(ctx, "declared", redlock.WithTTL(30*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	eventually(t, 5*time.Second, func() bool {
		return record(0) == "30000" && record(1) == "30000" && record(2) == "30000" && record(3) == "30000"
	}, "the declaration did not reach the nodes that were up")
	require.Equal(t, "1000", record(4), "node 4 was down: it missed the declaration")
	cl.Nodes[4].Up()
	eventually(t, 10*time.Second, func() bool {
		if l, err := c.TryAcquire(ctx, "after"); err == nil {
			require.NoError(t, l.Release(ctx))
		}
		return record(4) == "30000"
	}, "node 4's record was not raised to the declared 30 s by the grants that read it")
}
