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
	var failover *redlock.QuarantineError
	for _, e := range ops(rec.take(), redlock.OpIncarnation) {
		var qe *redlock.QuarantineError
		if e.Node == 0 && errors.As(e.Err, &qe) && errors.Is(qe, redlock.ErrNodeFailover) {
			failover = qe
		}
	}
	require.NotNil(t, failover, "no OpIncarnation event with ErrNodeFailover for node 0")
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
