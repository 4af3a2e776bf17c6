package redlock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
)

// TestSentinelGroupsSoak is issue 45's soak: three Redlock nodes, each a
// Sentinel service (a primary, a replica and three sentinels: 15
// processes), four clients with the default options but the TTL (3 s, so
// a 3 s quarantine; no WithTrustNodesAtStart, no WithWait: WAIT is on by
// default where a node has replicas), one holder each (two keep fenced
// locks alive 2-8 s, two hold them 5-50 ms), all contending for three
// resources throughout these failovers, one after the other:
//
//   - (a) the resume race: node 0's primary is paused until its sentinels
//     name the replica, then resumed at once: it answers ROLE master until
//     the sentinels convert it, ~10 s later (issue 45: 17 overlaps in one
//     run);
//   - (c) a hung sentinel: node 1's first sentinel (the one every client's
//     switch watcher listens to) is stopped (SIGSTOP), node 1's primary
//     paused, SENTINEL FAILOVER sent to another sentinel, and the old
//     primary resumed once the live sentinels name the new one (issue 45:
//     202 overlaps in 408 acquisitions);
//   - (d) double lag failovers: on nodes 0 and 2 at once, the replica is
//     paused 400 ms while grants go on, then the primary is paused and the
//     replica resumed, so the sentinels promote a replica that lacks the
//     primary's last writes; then a fifth client, made now, joins with a
//     holder of its own (issue 45: 9 overlaps for a client started after a
//     lag failover).
//
// Asserted: no two holders of one resource inside their critical sections
// at once while the first one's validity had not ended when the second's
// attempt began, tokens strictly increasing, every client reports every
// failover of its nodes (OpIncarnation, ErrNodeFailover) within 8 s of the
// sentinels' switch (the old primary answers as one ~10 s; the figure is
// logged: issue 45 asks 2 s, judged in results/operations, not here on
// shared cores). It takes about a minute and 15 processes, in make test
// too (it passed under -race beside two CPU burners); make sentinel-soak
// runs it alone.
func TestSentinelGroupsSoak(t *testing.T) {
	redistest.Require(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var groups []*redisproc.SentinelGroup
	var addrs []string
	for k := 0; k < 3; k++ {
		g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Name: fmt.Sprintf("group%d", k)})
		groups = append(groups, g)
		addrs = append(addrs, "redis-sentinel://"+g.SentinelAddrs()[0]+"?sentinelMasterId="+g.Name+
			"&sentinel="+g.SentinelAddrs()[1]+"&sentinel="+g.SentinelAddrs()[2])
	}
	s := newSoak(seed, 5)
	mk := func(i int) {
		s.obs[i] = &soakObs{}
		s.clients[i] = newClient(t, addrs, redlock.WithTTL(soakTTL), redlock.WithObserver(s.obs[i]))
	}
	for i := 0; i < 4; i++ {
		mk(i)
	}
	for i := 0; i < 3; i++ {
		s.res = append(s.res, &soakRes{name: fmt.Sprintf("sentinel-groups:r%d", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { // before t.Cleanup closes the clients and stops the servers
		cancel()
		s.wg.Wait()
	}()
	for id := 0; id < 4; id++ {
		s.wg.Add(1)
		go s.holder(ctx, id, id, id%2 == 0)
	}
	time.Sleep(soakTTL + time.Second) // first use: every node's quarantine, then grants

	var follows []string
	followed := func(what string, node int, paused, switched time.Time, clients int) {
		t.Helper()
		var worst time.Duration
		soakWait(t, 60*time.Second, func() bool {
			worst = 0
			for i := 0; i < clients; i++ {
				f, ok := s.obs[i].after(node, paused)
				if !ok {
					return false
				}
				worst = max(worst, f.at.Sub(switched))
			}
			return true
		}, "%s: a client never reported node %d's failover", what, node)
		follows = append(follows, fmt.Sprintf("%s node %d: %v", what, node, worst.Round(time.Millisecond)))
		if worst > 8*time.Second {
			t.Errorf("%s: a client followed node %d's switch only %v after it (the old primary answers as one ~10 s)", what, node, worst)
		}
	}
	begin := func() time.Time { s.pauses.Add(1); now := time.Now(); s.pausedAt.Store(now.UnixNano()); return now }
	end := func() { s.followed.Add(1) }

	// (a) node 0: the old primary resumed right after the switch
	g := groups[0]
	old, err := g.Primary()
	if err != nil {
		t.Fatal(err)
	}
	pausedA := begin()
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	_, swA := sentinelsName(t, g, g.Sentinels, old)
	if err := old.Resume(); err != nil {
		t.Fatal(err)
	}
	followed("(a) resumed primary", 0, pausedA, swA, 4)
	end()
	time.Sleep(11 * time.Second) // the old primary's ~10 s as a primary
	if err := g.WaitReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}

	// (c) node 1: the watched sentinel hangs through a SENTINEL FAILOVER
	g = groups[1]
	old, err = g.Primary()
	if err != nil {
		t.Fatal(err)
	}
	hung := g.Sentinels[0]
	if err := hung.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = hung.Resume()
		}
	}()
	pausedC := begin()
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := redisproc.Command(g.Sentinels[1].Addr, "", "SENTINEL", "FAILOVER", g.Name); err != nil {
		t.Fatal(err)
	}
	_, swC := sentinelsName(t, g, g.Sentinels[1:], old)
	if err := old.Resume(); err != nil {
		t.Fatal(err)
	}
	followed("(c) hung sentinel", 1, pausedC, swC, 4)
	end()
	time.Sleep(11 * time.Second)
	resumed = true
	if err := hung.Resume(); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups[:3] {
		if err := g.WaitReady(60 * time.Second); err != nil {
			t.Fatal(err)
		}
	}

	// (d) nodes 0 and 2: lag failovers at once, then a new client
	pausedD := begin()
	type lag struct {
		node     int
		old, rep *redisproc.Server
	}
	var lags []lag
	for _, node := range []int{0, 2} {
		g := groups[node]
		p, err := g.Primary()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range g.Data {
			if d != p {
				lags = append(lags, lag{node, p, d})
			}
		}
	}
	for _, l := range lags {
		if err := l.rep.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(400 * time.Millisecond) // grants the replicas do not get
	for _, l := range lags {
		if err := l.old.Pause(); err != nil {
			t.Fatal(err)
		}
		if err := l.rep.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range lags {
		g := groups[l.node]
		_, sw := sentinelsName(t, g, g.Sentinels, l.old)
		followed("(d) lag failover", l.node, pausedD, sw, 4)
	}
	end()
	mk(4)
	s.wg.Add(1)
	go s.holder(ctx, 4, 4, false)
	time.Sleep(2 * soakTTL) // the new client's holds, beside the others'
	for _, l := range lags {
		if err := l.old.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(soakTTL)
	cancel()
	s.wg.Wait()

	s.mu.Lock()
	for _, n := range s.notes {
		t.Log(n)
	}
	s.mu.Unlock()
	var fo []string
	for i, o := range s.obs {
		o.mu.Lock()
		fo = append(fo, fmt.Sprintf("client %d: %d", i, len(o.fo)))
		o.mu.Unlock()
	}
	t.Logf("SUMMARY seed %d: %d fenced grants (%d kept alive; %d not acquired, %d other errors %v); overlaps %d; token regressions %d (late exits %d, late records %d); keep-alive losses %d %v; ErrNodeFailover events %s; clients followed the switch (worst client) %s",
		seed, s.grants.Load(), s.longHolds.Load(), s.notAcquired.Load(), s.otherErrs.Load(), s.errs,
		s.overlaps.Load(), s.regressions.Load(), s.lateExits.Load(), s.lateRecords.Load(),
		soakSum(s.losses), s.losses, strings.Join(fo, ", "), strings.Join(follows, "; "))
	if s.overlaps.Load() != 0 || s.regressions.Load() != 0 {
		t.Errorf("SAFETY: %d overlaps, %d token regressions (seed %d; see the notes above)", s.overlaps.Load(), s.regressions.Load(), seed)
	}
	if s.zeroToks.Load() != 0 {
		t.Errorf("%d fenced grants without a token", s.zeroToks.Load())
	}
	if s.grants.Load() == 0 {
		t.Errorf("no grants")
	}
}

// sentinelsName waits (up to 60 s) until every sentinel of among names
// one primary other than old, and returns it and when.
func sentinelsName(t *testing.T, g *redisproc.SentinelGroup, among []*redisproc.Server, old *redisproc.Server) (string, time.Time) {
	t.Helper()
	named, at, err := g.WaitNamed(among, old, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return named, at
}
