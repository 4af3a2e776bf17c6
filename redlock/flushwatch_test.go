package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
)

// TestRealDataSetReplacedUnseen's resync on the fake, scripted: nodes 0-2
// resync from copies of their own data sets taken before A's grant (the
// marker the clients accepted among what they carry), while a connected
// client sends them nothing; the fake tells its tracking connections of
// the flush ahead of their next reply, as Redis does. The connected
// client must be refused while A's lock is valid, by ErrDataSetFlushed,
// and take the lock once the quarantine is over.
func TestFlushWatchResyncOwnCopy(t *testing.T) {
	cl := startCluster(t, 5)
	addrs := cl.Addrs()
	ctx := context.Background()
	const ttl = 3 * time.Second
	a := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
	connected := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
	warm(t, connected)
	copies := make([]*fakeserver.Node, 3)
	for i := range copies {
		cp, err := fakeserver.StartNode(fakeserver.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cp.Close() })
		cp.Resync(cl.Nodes[i]) // a replica's copy, detached
		copies[i] = cp
	}
	la, err := a.Acquire(ctx, "unseen")
	require.NoError(t, err)
	waitAllHold(t, addrs, "unseen", la)
	for i, cp := range copies {
		cl.Nodes[i].Resync(cp)
	}
	require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "unseen", la.Value()), "A's keys were lost")
	_, err = connected.TryAcquire(ctx, "unseen")
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, redlock.ErrDataSetFlushed, "the connected client counted a resynced node")
	require.Greater(t, la.Validity(), time.Duration(0), "judged while A was valid")
	// each node is judged once a reply of its after the flush is read (an
	// attempt decided early leaves some unread)
	eventually(t, 5*time.Second, func() bool {
		_, err := connected.TryAcquire(ctx, "unseen")
		require.ErrorIs(t, err, redlock.ErrNotAcquired)
		q := connected.Quarantined()
		return q[0] > 0 && q[1] > 0 && q[2] > 0
	}, "nodes 0-2 were not all quarantined")
	eventually(t, 3*ttl, func() bool {
		l, err := connected.TryAcquire(ctx, "unseen")
		if err != nil {
			return false
		}
		require.NoError(t, l.Release(ctx))
		return true
	}, "the nodes never counted again after their quarantine")
}
