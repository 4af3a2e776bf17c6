package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/redlock"
	"github.com/redmux/redmux/redlock/scripts"
)

// TestRealDataSetReplacedUnseen on the fake, scripted: nodes 0-2 resync
// from copies of their own data sets taken before A's grant (the marker
// the clients accepted among what they carry), or are flushed and get
// their marker keys back at once (a restore), while a connected client
// sends them nothing; the fake tells its tracking connections of the flush
// ahead of their next reply, as Redis does. The connected client must be
// refused while A's lock is valid, each node quarantined for its flush
// (ErrDataSetFlushed: after the flush-restore, whose incarnation is
// unchanged, nothing else tells), and take the lock once the quarantine
// is over. The -no-watch cases run on nodes that refuse CLIENT TRACKING:
// nothing is told on the connection, and the replication history each
// grant reads (INFO replication after the MGET, rule 4's third witness)
// tells the resync, as a copy (Resync) or as an older copy of its own
// (ResyncLag); mutants history-unread, history-unchecked. (A restore
// after FLUSHALL keeps the history: not closed without the watch.)
func TestFlushWatchResyncOwnCopy(t *testing.T) {
	for _, how := range []string{"resync-own-copy", "flush-restore", "resync-own-copy-no-watch", "resync-lag-no-watch"} {
		t.Run(how, func(t *testing.T) {
			cl := startClusterWith(t, 5, fakeserver.Config{RefuseTracking: strings.HasSuffix(how, "-no-watch")})
			addrs := cl.Addrs()
			ctx := context.Background()
			const ttl = 3 * time.Second
			a := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart())
			obs := &incEvents{}
			connected := newClient(t, addrs, redlock.WithTTL(ttl), redlock.WithTrustNodesAtStart(), redlock.WithObserver(obs))
			warm(t, connected)
			mk, _, tk := scripts.MarkerKeys("")
			copies := make([]*fakeserver.Node, 3)
			var kept [3][2]string
			for i := range copies {
				kept[i] = [2]string{string(rawDo(t, addrs[i], "GET", mk).Data), string(rawDo(t, addrs[i], "GET", tk).Data)}
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
				switch how {
				case "resync-own-copy", "resync-own-copy-no-watch":
					cl.Nodes[i].Resync(cp)
					continue
				case "resync-lag-no-watch":
					// its writes since A's grant began lost, the marker kept
					cl.Nodes[i].ResyncLag(time.Since(la.Until().Add(-ttl)) + time.Millisecond)
					continue
				}
				cl.Nodes[i].Flush()
				rawDo(t, addrs[i], "SET", mk, kept[i][0])
				if kept[i][1] != "" {
					rawDo(t, addrs[i], "SET", tk, kept[i][1])
				}
			}
			require.Equal(t, []bool{false, false, false, true, true}, holders(t, addrs, "unseen", la.Value()), "A's keys were lost")
			// every attempt is refused until each node is judged (its next
			// reply after the flush read, its connection set up again)
			var last error
			eventually(t, 5*time.Second, func() bool {
				_, last = connected.TryAcquire(ctx, "unseen")
				require.ErrorIs(t, last, redlock.ErrNotAcquired, "the connected client counted a flushed node")
				q := connected.Quarantined()
				return q[0] > 0 && q[1] > 0 && q[2] > 0
			}, "nodes 0-2 were not all quarantined")
			for i := 0; i < 3; i++ {
				require.Contains(t, obs.causes(i), redlock.ErrDataSetFlushed, "node %d", i)
			}
			require.Greater(t, la.Validity(), time.Duration(0), "judged while A was valid")
			eventually(t, 3*ttl, func() bool {
				l, err := connected.TryAcquire(ctx, "unseen")
				if err != nil {
					return false
				}
				require.NoError(t, l.Release(ctx))
				return true
			}, "the nodes never counted again after their quarantine")
		})
	}
}
