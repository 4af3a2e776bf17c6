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
	c, err := fakeserver.StartChild(3, fakeserver.ChildOptions{Args: []string{"-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := lockParams{TTL: 10 * time.Second, Timeout: time.Second, DialTimeout: time.Second,
		DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond, FreshNodes: true}
	s, err := newMuxStrategy(c.Addrs(), p, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := s.(*muxStrategy).m
	for i := 0; i < m.N(); i++ {
		inc := m.Incarnation(i)
		if inc == nil || !inc.Known || !inc.WatchesFlushes {
			t.Errorf("node %d: incarnation %+v; want known, with the flush watch on (as redlock.New sets it up)", i, inc)
		}
	}
}
