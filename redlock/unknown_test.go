package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
	"github.com/stretchr/testify/require"
)

// Nodes that refuse INFO (a managed service, an ACL) restart from an
// older snapshot: the lock keys of the last 200 ms are lost, the data-set
// markers (older) kept, so rule 4 sees nothing and the new process's
// run_id is not told. Each set-up of such a node may be a new process's:
// the connected client (which trusted them at start) and a new one must
// both find nodes 0-2 quarantined while A's lock is valid
// (docs/OPERATIONS.md, rule 1; before: both took it).
func TestQuarantineInfoRefusedRestartLag(t *testing.T) {
	cl := startCluster(t, 5)
	for _, n := range cl.Nodes {
		n.RefuseInfo(true)
	}
	addrs := cl.Addrs()
	ctx := context.Background()
	a := newClient(t, addrs, redlock.WithTTL(10*time.Second), redlock.WithTrustNodesAtStart())
	b := newClient(t, addrs, redlock.WithTTL(10*time.Second), redlock.WithTrustNodesAtStart())
	warm(t, b)
	time.Sleep(300 * time.Millisecond) // the markers are older than the writes lost below
	la, err := a.Acquire(ctx, "noinfo-snapshot")
	require.NoError(t, err)
	waitAllHold(t, addrs, "noinfo-snapshot", la)
	for i := 0; i < 3; i++ {
		require.NoError(t, cl.Nodes[i].RestartLag(200*time.Millisecond))
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "noinfo-snapshot", la.Value()), "A's keys were lost")
	refusedWhileValid(t, b, "noinfo-snapshot", la, "the connected client")
	fresh := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	err = refusedWhileValid(t, fresh, "noinfo-snapshot", la, "a new client")
	require.ErrorIs(t, err, redlock.ErrQuarantined)
}

// On Redis Cluster nodes, one shard that refuses INFO makes the node's
// incarnation unknown (mux joins its shards'), and so hides every other
// shard's restart: three Redlock nodes of three shards each, shard 2 of
// each refusing INFO; A's lock key lives on shard 0; shard 0 of nodes 0
// and 1 restarts from an older snapshot (A's keys lost, markers kept).
// The unknown node's incarnation is as of its newest set-up (shard 0's,
// after the restart), so the connected client quarantines nodes 0 and 1
// from then. make safety's TestSafetyClusterRestarts found this: two
// holders, the second granted by a shard 3 ms after its restart, while
// another shard of the node refused INFO (2026-11-30). The clients' first
// set-ups are older than the quarantine (Q, A's 3 s TTL) when A acquires:
// a quarantine counted from those would be over.
func TestClusterInfoRefusedShardHidesNoRestart(t *testing.T) {
	groups, addrs := threeClusters(t, func(cl *fakeserver.Cluster) { cl.Nodes[2].RefuseInfo(true) })
	res := shard0Resource("noinfo:")
	ctx := context.Background()
	const ttl = 3 * time.Second
	a := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
	b := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
	warm(t, b)
	time.Sleep(ttl + 300*time.Millisecond)
	la, err := a.Acquire(ctx, res)
	require.NoError(t, err)
	held := func(g int) bool {
		v, ok := groups[g].Nodes[0].Get(res)
		return ok && string(v) == string(la.Value())
	}
	eventually(t, 2*time.Second, func() bool { return held(0) && held(1) && held(2) }, "not every node's shard 0 got A's SET")
	for g := 0; g < 2; g++ {
		require.NoError(t, groups[g].Nodes[0].RestartLag(time.Second))
		require.False(t, held(g), "node %d's shard 0 lost A's key", g)
	}
	err = refusedWhileValid(t, b, res, la, "the connected client")
	require.ErrorIs(t, err, redlock.ErrQuarantined)
}

// A shard of a Redis Cluster node loses its keys without a restart
// (FLUSHALL on that primary), then a resharding moves a slot it served,
// with nothing in it, to another shard: A's key is gone from nodes 0 and
// 1 and the shard that now serves it has its own marker, intact, so no
// marker or incarnation tells. The connected client follows the new map
// (another shard's connections drop and come back to the same process:
// it asks for the map again) without ever reading the wiped shard's
// marker; it saw the slot move (its map changed) and does not count a
// grant on that slot until the quarantine has passed since
// (docs/OPERATIONS.md, Redis Cluster rule 6; before, it took A's lock at
// its first attempt).
func TestClusterWipeThenMove(t *testing.T) {
	groups, addrs := threeClusters(t, nil)
	res := shard0Resource("wipemove:")
	ctx := context.Background()
	a := newClient(t, addrs, redlock.WithTTL(10*time.Second), redlock.WithTrustNodesAtStart())
	b := newClient(t, addrs, redlock.WithTTL(10*time.Second), redlock.WithTrustNodesAtStart())
	warm(t, b)
	la, err := a.Acquire(ctx, res)
	require.NoError(t, err)
	wipeThenMove(t, groups, res)
	for g := 0; g < 2; g++ {
		groups[g].Nodes[2].Down() // the same process back at once
		groups[g].Nodes[2].Up()
	}
	time.Sleep(time.Second) // b redials shard 2 and asks for the map
	moved := 0
	for k := 0; k < 10; k++ {
		_, err := b.TryAcquire(ctx, res)
		require.Error(t, err, "attempt %d: a second holder while A's validity is %v", k, la.Validity())
		if errors.Is(err, redlock.ErrSlotMoved) {
			moved++
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Positive(t, moved, "no attempt met the moved slot")
}

// TestClusterWipeThenMove for a client made after the move: it never saw
// the slot on its old shard. New reads every shard's marker; the wiped
// shard has none (or a young one), and a young data set on any shard of a
// cluster node holds back the whole node's grants until it is old enough
// (Redis Cluster rule 6): its slots may have moved, with what it had lost,
// to shards whose markers are intact (before, a new client took A's lock
// at its first attempt).
func TestClusterWipeThenMoveNewClient(t *testing.T) {
	groups, addrs := threeClusters(t, nil)
	res := shard0Resource("wipemove-new:")
	ctx := context.Background()
	a := newClient(t, addrs, redlock.WithTTL(10*time.Second), redlock.WithTrustNodesAtStart())
	la, err := a.Acquire(ctx, res)
	require.NoError(t, err)
	wipeThenMove(t, groups, res)
	fresh := newClient(t, addrs, redlock.WithTTL(10*time.Second))
	young := 0
	for k := 0; k < 10; k++ {
		_, err := fresh.TryAcquire(ctx, res)
		require.Error(t, err, "attempt %d: a second holder while A's validity is %v", k, la.Validity())
		if errors.Is(err, redlock.ErrDataSetNew) {
			young++
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Positive(t, young, "no attempt met the young shard")
}

// threeClusters starts three Redlock nodes that are Redis Clusters of
// three shards each (the fake's), runs prep (if any) on each before any
// client meets it, and returns them with their addresses.
func threeClusters(t *testing.T, prep func(*fakeserver.Cluster)) ([]*fakeserver.Cluster, []string) {
	t.Helper()
	var groups []*fakeserver.Cluster
	var addrs []string
	for g := 0; g < 3; g++ {
		cl, err := fakeserver.StartShardedCluster(3, fakeserver.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cl.Close() })
		if prep != nil {
			prep(cl)
		}
		groups = append(groups, cl)
		a := cl.Addrs()
		addrs = append(addrs, nodeaddr.ClusterScheme+"://"+a[0]+"?seed="+a[1]+"&seed="+a[2])
	}
	return groups, addrs
}

// shard0Resource is a resource named prefix and a number whose slot shard
// 0 of the fake's three serves (slots [0, 5461)).
func shard0Resource(prefix string) string {
	for i := 0; ; i++ {
		if r := prefix + strconv.Itoa(i); mux.KeySlot(r) < 5000 {
			return r
		}
	}
}

// wipeThenMove wipes shard 0 of nodes 0 and 1 (FLUSHALL: connections and
// process kept) and then moves res's slot, empty, to their shard 1.
func wipeThenMove(t *testing.T, groups []*fakeserver.Cluster, res string) {
	t.Helper()
	for g := 0; g < 2; g++ {
		groups[g].Nodes[0].Flush()
		_, err := fakeserver.MoveSlot(mux.KeySlot(res), groups[g].Nodes[1])
		require.NoError(t, err)
	}
}
