package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
	"github.com/stretchr/testify/require"
)

// A key whose slot moves to another shard keeps its remaining TTL in
// whole milliseconds, read on the source's clock and counted from the
// target's (MIGRATE, and the fake's MoveSlot, as Redis does): it loses up
// to 1 ms of its life when the two clocks' fractions of a millisecond
// differ, whatever the clocks' errors. A client with a Redis Cluster node
// budgets that millisecond (docs/OPERATIONS.md, Redis Cluster rule 5): with
// no drift allowance of its own (factor 0, fixed 0), every lock's keys,
// their slots moved once to a shard whose clock is 0.5 ms ahead or
// behind, still outlive its validity. (make safety's
// TestSafetyClusterRestarts found an overlap of 0.81 ms without it.)
func TestClusterMoveKeepsValidity(t *testing.T) {
	var groups []*fakeserver.Cluster
	var addrs []string
	for g := 0; g < 3; g++ {
		cl, err := fakeserver.StartShardedCluster(2, fakeserver.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cl.Close() })
		cl.Nodes[1].StepClock(500*time.Microsecond, 0) // before any key
		groups = append(groups, cl)
		a := cl.Addrs()
		addrs = append(addrs, nodeaddr.ClusterScheme+"://"+a[0]+"?seed="+a[1])
	}
	// a node timeout ten times the default 50 ms: 1,200 acquisitions on
	// a loaded -race run may meet a stall that long (CI saw one attempt
	// with all three nodes pending); the validity does not depend on it
	c := newClient(t, addrs, redlock.WithTTL(time.Second), redlock.WithDriftFactor(0), redlock.WithFixedDrift(0),
		redlock.WithTrustNodesAtStart(), redlock.WithNodeTimeout(500*time.Millisecond))
	ctx := context.Background()
	// keys of shard 0's slots below its highest (the anchor, where its
	// marker lives) move to shard 1, below its own: no anchor changes.
	// Without the budget a move outlives the validity by its SET's
	// latency at least, so only a few moves in a hundred cut it short:
	// 120 moves let that mutant (cluster-move-drift-ignored) through in 2
	// runs of 20, 1,200 in none of 40
	moved := 0
	for k := 0; k < 2000 && moved < 1200; k++ {
		name := "move:" + strconv.Itoa(k)
		slot := mux.KeySlot(name)
		if slot >= mux.ClusterSlots/2-1 {
			continue
		}
		l, err := c.TryAcquire(ctx, name)
		require.NoError(t, err, name)
		until := l.Until()
		for g, cl := range groups {
			if _, ok := cl.Nodes[0].Get(name); !ok {
				continue // not granted there (a quorum answered first)
			}
			n, err := fakeserver.MoveSlot(slot, cl.Nodes[1])
			require.NoError(t, err)
			require.Equal(t, 1, n, "cluster %d: the key moved", g)
			moved++
			// the key lives until the target's clock (rate 0) passes its
			// expiry millisecond: PTTL + 1 ms from the read, which ends
			// before now
			left := cl.Nodes[1].PTTL(name)
			dead := time.Now().Add(left + time.Millisecond)
			require.False(t, dead.Before(until), "cluster %d, %s: the key moved to shard 1 expires %v before the lock's validity ends",
				g, name, until.Sub(dead))
		}
		require.NoError(t, l.Release(ctx))
	}
	require.Greater(t, moved, 1000)
}
