package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
)

// TestSentinelFailoverLock: node 0 of three is a Sentinel service
// (primary, replica, 3 sentinels), nodes 1 and 2 standalone
// redis-servers. A holds a lock kept alive through a real failover of
// node 0 (the primary paused with SIGSTOP, the replica promoted); a
// second client B tries for the same lock all along and never gets it
// while A's keep-alive lasts; A's client follows the failover by itself
// (mux asks the sentinels again), reports node 0's new incarnation to its
// observer as a failover (OpIncarnation, ErrNodeFailover), quarantines it
// (Quarantined) and puts A's key back on the new primary. Once A releases,
// B acquires.
func TestSentinelFailoverLock(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	solo := redistest.StartN(t, 2, redistest.Options{})
	node0 := "redis-sentinel://" + g.SentinelAddrs()[0] + "?sentinelMasterId=" + g.Name +
		"&sentinel=" + g.SentinelAddrs()[1] + "&sentinel=" + g.SentinelAddrs()[2]
	addrs := []string{node0, solo[0].Addr, solo[1].Addr}
	ctx := context.Background()
	const ttl = 3 * time.Second
	rec := &recorder{}
	a := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart(), redlock.WithObserver(rec),
		redlock.WithNodeTimeout(100*time.Millisecond))
	b := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart(), redlock.WithNodeTimeout(100*time.Millisecond))
	const key = "sentinel:lock"
	la, err := a.Acquire(ctx, key)
	require.NoError(t, err)
	kctx, err := la.KeepAlive(ctx)
	require.NoError(t, err)

	old, err := g.Primary()
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, old.Pause())
	type result struct {
		addr string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		nw, err := g.WaitFailover(old, 60*time.Second)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{addr: nw.Addr}
	}()
	// B tries all along; A's client is watched for the failover's quarantine
	var nw string
	var seen time.Duration
	tries := 0
	for deadline := time.Now().Add(60 * time.Second); ; {
		require.True(t, time.Now().Before(deadline), "no quarantine of node 0 within 60 s (events %v)", rec.take())
		tries++
		if lb, err := b.TryAcquire(ctx, key); err == nil {
			_ = lb.Release(ctx)
			t.Fatalf("B acquired %s while A holds it (A's keep-alive: %v)", key, context.Cause(kctx))
		}
		if nw == "" {
			select {
			case r := <-done:
				require.NoError(t, r.err)
				nw = r.addr
				t.Logf("sentinels switched to %s %v after the pause", nw, time.Since(start).Round(time.Millisecond))
			default:
			}
		}
		if _, q := a.Quarantined()[0]; q && seen == 0 {
			seen = time.Since(start)
		}
		if seen > 0 && nw != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, kctx.Err(), "A lost the lock through the failover: %v", context.Cause(kctx))
	// the event comes with the keep-alive's (delivered on the client's
	// outbox goroutine, after the quarantine it reports took effect)
	var failover *redlock.QuarantineError
	eventually(t, 10*time.Second, func() bool {
		for _, e := range ops(rec.take(), redlock.OpIncarnation) {
			var qe *redlock.QuarantineError
			if e.Node == 0 && errors.As(e.Err, &qe) && errors.Is(qe, redlock.ErrNodeFailover) {
				failover = qe
			}
		}
		return failover != nil
	}, "no OpIncarnation event with ErrNodeFailover for node 0")
	t.Logf("A's client quarantined node 0 %v after the pause: %v; B tried %d times, refused every time", seen.Round(time.Millisecond), failover, tries)

	// A's key is put back on the new primary by the keep-alive's
	// extensions (docs/OPERATIONS.md, rule 3)
	eventually(t, 10*time.Second, func() bool {
		r, err := rawDoErr(nw, "GET", key)
		return err == nil && string(r.Data) == string(la.Value())
	}, "A's key not put back on the new primary %s", nw)
	require.NoError(t, kctx.Err(), "A lost the lock: %v", context.Cause(kctx))
	for _, d := range g.Data {
		if d.Addr == nw {
			require.NoError(t, g.Rejoin(old, d, 30*time.Second))
		}
	}
	require.NoError(t, la.Release(ctx))
	lb, err := b.Acquire(ctx, key, redlock.WithTries(100), redlock.WithRetryDelay(20*time.Millisecond, 40*time.Millisecond))
	require.NoError(t, err, "B after A's release")
	require.NoError(t, lb.Release(ctx))
}

// A grant on a Sentinel node counts only once the node's replica holds
// it (WAIT, issue 45): node 0 of three is a Sentinel service whose
// replica lags (paused, its replication link cut: what the primary writes
// now never reaches it), node 2 holds someone else's key for a second.
// A's acquisition needs node 0, whose WAIT is not met: not acquired. The
// control (WithReplicaAcks(0)) acquires on node 0's primary and node 1;
// then the primary dies, the lagging replica (without the key) is
// promoted, node 2's foreign key expires, and a client made after the
// failover takes the lock too: two holders, which the default prevents.
// The replica has been up longer than the quarantine (8 s TTL), so the
// new client trusts the promoted replica by its uptime (rule 2's limit):
// only the WAIT stands between it and A's lost key.
func TestSentinelWaitGrant(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "default"
		if control {
			name = "control: WithReplicaAcks(0)"
		}
		t.Run(name, func(t *testing.T) {
			const ttl = 8 * time.Second
			g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
			started := time.Now()
			solo := redistest.StartN(t, 2, redistest.Options{})
			node0 := "redis-sentinel://" + g.SentinelAddrs()[0] + "?sentinelMasterId=" + g.Name +
				"&sentinel=" + g.SentinelAddrs()[1] + "&sentinel=" + g.SentinelAddrs()[2]
			addrs := []string{node0, solo[0].Addr, solo[1].Addr}
			ctx := context.Background()
			// The default case's WAIT, bounded by 3/4 of the node timeout
			// and answered at the server's next 100 ms tick, must answer
			// within the call: node 0's grant then fails for its replicas
			// (not pending), which a grant counted without them (the
			// mutant wait-ignored) turns into an acquisition. With 200 ms
			// it answered after the call about half the time, and the
			// test passed on such a grant too.
			opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart(), redlock.WithNodeTimeout(time.Second)}
			if control {
				opts = []redlock.Option{redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart(), redlock.WithNodeTimeout(200 * time.Millisecond), redlock.WithReplicaAcks(0)}
			}
			a := newClient(t, addrs, opts...)
			warm(t, a)
			primary, replica := g.Data[0], g.Data[1]
			if control {
				time.Sleep(time.Until(started.Add(ttl + 2*time.Second))) // the replica is older than a quarantine
			}
			require.NoError(t, replica.Pause())
			rawDo(t, primary.Addr, "CLIENT", "KILL", "TYPE", "replica") // what follows is not replicated
			r := rawDo(t, solo[1].Addr, "SET", "sentinel:wait", "someone-else", "PX", "1000")
			require.True(t, r.IsOK())
			la, err := a.TryAcquire(ctx, "sentinel:wait")
			if !control {
				var ne *redlock.NotAcquiredError
				require.ErrorAs(t, err, &ne, "a grant on node 0 counted before its replica had it")
				require.Len(t, ne.Nodes, 3)
				require.Equal(t, redlock.NodeGranted, ne.Nodes[1].Status, "node 1: %+v", ne.Nodes[1])
				require.Equal(t, redlock.NodeFailed, ne.Nodes[0].Status, "node 0: %+v", ne.Nodes[0])
				require.ErrorContains(t, ne.Nodes[0].Err, "(WAIT)", "node 0: its grant must fail for its replicas")
				t.Logf("node 0: %v", ne.Nodes[0].Err)
				require.NoError(t, replica.Resume())
				return
			}
			require.NoError(t, err, "the control acquires on node 0's primary and node 1")
			primary.Stop() // its last writes die with it
			require.NoError(t, replica.Resume())
			_, err = g.WaitFailover(primary, 60*time.Second)
			require.NoError(t, err)
			b := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithReplicaAcks(0))
			var lb redlock.Lock
			var berr error
			eventually(t, la.Validity(), func() bool {
				lb, berr = b.TryAcquire(ctx, "sentinel:wait")
				return berr == nil
			}, "the control's second client never got the lock")
			require.Positive(t, la.Validity(), "two holders at once: what WAIT prevents")
			t.Logf("control: two holders, A valid for %v", la.Validity().Round(time.Millisecond))
			_ = lb.Release(ctx)
		})
	}
}
