package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
)

// TestFencingHistoryReplaced: after a resync from an older copy of its
// own on nodes without the flush watch, judged from a grant's INFO
// replication on the kept connection (rule 4's third witness), a plain
// grant counts the nodes again after their quarantine, a fenced one does
// not (their counters may be the copy's, under the old history's tag),
// until a set-up judges the new history (a failover: counters stale, and
// a resource without counters there is granted).
// Mutant fence-history-replaced-counted.
func TestFencingHistoryReplaced(t *testing.T) {
	cl := startClusterWith(t, 5, fakeserver.Config{RefuseTracking: true})
	addrs := cl.Addrs()
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	c := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
	warm(t, c)
	l, err := c.Acquire(ctx, "fh", redlock.WithFencing())
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	for i := 0; i < 3; i++ {
		cl.Nodes[i].ResyncLag(time.Millisecond)
	}
	eventually(t, 20*ttl, func() bool {
		l, err := c.TryAcquire(ctx, "fh:plain")
		if err != nil {
			return false
		}
		require.NoError(t, l.Release(ctx))
		return len(c.Quarantined()) == 0
	}, "the resynced nodes never counted again for plain grants")
	for try := 0; try < 3; try++ {
		_, err = c.TryAcquire(ctx, "fh", redlock.WithFencing())
		require.Error(t, err, "a fenced grant counted nodes whose history a grant found replaced, before a set-up judged it")
	}
	for i := 0; i < 3; i++ { // a redial: the set-up learns the new history
		cl.Nodes[i].Down()
		cl.Nodes[i].Up()
	}
	// a resource whose counters the copy did not hold (fh's are stale
	// now on a majority: docs/FENCING.md, a majority failed over)
	var last error
	eventually(t, 30*ttl, func() bool {
		l, err := c.TryAcquire(ctx, "fh:new", redlock.WithFencing())
		if err != nil {
			last = err
			return false
		}
		require.NoError(t, l.Release(ctx))
		return true
	}, "no fenced grant after the nodes were set up again: %v", lazy(func() string {
		return fmt.Sprintf("the last attempt's error: %v; quarantined: %v", last, c.Quarantined())
	}))
}

// lazy is a message part that eventually's Fatalf formats when it fails,
// not when the call is made: what the condition saw last.
type lazy func() string

func (f lazy) String() string { return f() }
