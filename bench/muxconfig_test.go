package bench

import (
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
)

// The mux strategy measures the lock as redlock.New runs it: its client
// asks every node for the flush watch (mux.Config.WatchFlushes), as
// redlock.New does. Without it, each acquisition also reads INFO
// replication (redlock's history check for nodes without the watch), and
// the benchmark measured that fallback at 14 % more client CPU per pair
// than the default (results/cost/README.md, fourteenth session).
func TestMuxStrategyWatchesFlushes(t *testing.T) {
	m := childMuxStrategy(t, 3, 1).m
	for i := 0; i < m.N(); i++ {
		inc := m.Incarnation(i)
		if inc == nil || !inc.Known || !inc.WatchesFlushes {
			t.Errorf("node %d: incarnation %+v; want known, with the flush watch on (as redlock.New sets it up)", i, inc)
		}
	}
}

// childMuxStrategy starts n fake nodes in a child process (this test
// binary, see TestMain; no redis-server needed) and the mux strategy on
// them with conns connections per node; both stop when the test ends.
func childMuxStrategy(t *testing.T, n, conns int) *muxStrategy {
	t.Helper()
	c, err := fakeserver.StartChild(n, fakeserver.ChildOptions{Args: []string{"-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := lockParams{TTL: 10 * time.Second, Timeout: time.Second, DialTimeout: time.Second,
		DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, FreshNodes: true}
	s, err := newMuxStrategy(c.Addrs(), p, conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*muxStrategy)
}
