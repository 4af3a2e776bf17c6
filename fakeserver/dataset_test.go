package fakeserver

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Flush and Resync change the data set and keep the connection; the
// process (run_id) stays; Resync copies another node's keys (with their
// expiry) and reports a new replication history, as REPLICAOF and
// REPLICAOF NO ONE do.
func TestDataSetFaultsKeepConnections(t *testing.T) {
	a, b := startNode(t, Config{}), startNode(t, Config{})
	ca, cb := dial(t, a.Addr()), dial(t, b.Addr())
	ca.do("SET", "mine", "1")
	cb.do("SET", "theirs", "2", "PX", "60000")
	cb.do("HSET", "h", "f", "v")
	cb.do("ZADD", "z", "5", "m")
	run := a.RunID()

	a.Flush()
	if got := ca.do("EXISTS", "mine"); got != ":0\r\n" {
		t.Fatalf("after Flush: EXISTS mine = %q", got)
	}
	if a.RunID() != run || a.Stats().Restarts != 0 {
		t.Fatal("Flush restarted the process")
	}

	ca.do("SET", "mine", "1")
	replBefore := a.life.Load().replID
	a.Resync(b)
	if got := ca.do("GET", "theirs"); got != "$1\r\n2\r\n" { // same connection
		t.Fatalf("after Resync from b: GET theirs = %q", got)
	}
	if got := ca.do("EXISTS", "mine"); got != ":0\r\n" {
		t.Fatalf("after Resync: a's own key survived: %q", got)
	}
	if pt := a.PTTL("theirs"); pt <= 50*time.Second || pt > 60*time.Second {
		t.Fatalf("the copied key's TTL: %v", pt)
	}
	cb.do("HSET", "h", "f", "changed") // a deep copy: b's change is b's
	if got := ca.do("HGET", "h", "f"); got != "$1\r\nv\r\n" {
		t.Fatalf("HGET h f on the copy: %q", got)
	}
	cb.do("ZADD", "z", "9", "m", "1", "n")
	if got := ca.do("ZRANGE", "z", "0", "-1", "WITHSCORES"); got != "*2\r\n$1\r\nm\r\n$1\r\n5\r\n" {
		t.Fatalf("ZRANGE z on the copy: %q", got)
	}
	inc := a.life.Load()
	if inc.runID != run || inc.replID == replBefore || inc.replID2 != b.life.Load().replID || inc.secondOff < 0 {
		t.Fatalf("after Resync: %+v (run_id %s, history before %s)", inc, run, replBefore)
	}
	a.Resync(nil)
	if got := ca.do("DBSIZE"); got != ":0\r\n" {
		t.Fatalf("after Resync(nil): DBSIZE %q", got)
	}
	if got := ca.do("FAKE", "RESYNC"); got != "+OK\r\n" {
		t.Fatalf("FAKE RESYNC: %q", got)
	}
}

// Resync copies each key's absolute expiry, read then on the copy's own
// clock, as a Redis replica reads its primary's (the safety checker's end
// check leaves such a node out, redlock/internal/checker): a copy whose
// clock is 10 s ahead of its source's gives a key 10 s less to live, and
// its data-set generation is raised.
func TestResyncExpiryOnOwnClock(t *testing.T) {
	a, b := startNode(t, Config{}), startNode(t, Config{})
	b.SetClock(10*time.Second, 0)
	ca := dial(t, a.Addr())
	ca.do("SET", "k", "v", "PX", "60000")
	gen := b.DataGen()
	b.Resync(a)
	if b.DataGen() == gen {
		t.Fatal("Resync kept the data-set generation")
	}
	if pa, pb := a.PTTL("k"), b.PTTL("k"); pb <= 40*time.Second || pb > 50*time.Second+time.Millisecond || pa <= pb {
		t.Fatalf("PTTL on the source %v, on the copy 10 s ahead %v (want about 10 s less)", pa, pb)
	}
}

// FastForward keeps what a drifting clock gained before it: a clock
// running at 1.5x that has gained 10 ms or more, moved 1 s forward, is
// more than 1 s ahead (it was put back to 1 s exactly, the gain dropped).
func TestFastForwardKeepsDrift(t *testing.T) {
	n := startNode(t, Config{})
	n.SetClock(0, 0.5)
	time.Sleep(20 * time.Millisecond)
	n.FastForward(time.Second)
	if sk := n.ClockSkew(); sk < time.Second+10*time.Millisecond {
		t.Fatalf("clock skew after 20 ms at 1.5x and FastForward(1s): %v", sk)
	}
}

// RestartLag loses the writes of the last lag, keeps older keys, and
// starts a new process.
func TestRestartLagKeepsOlderKeys(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	c.do("SET", "old", "1")
	time.Sleep(300 * time.Millisecond)
	c.do("SET", "new", "1")
	run := n.RunID()
	if err := n.RestartLag(150 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n.RunID() == run {
		t.Fatal("RestartLag kept the run_id")
	}
	if _, ok := n.Get("new"); ok {
		t.Fatal("a write within the lag survived")
	}
	if _, ok := n.Get("old"); !ok {
		t.Fatal("a write older than the lag was lost")
	}
}

// RefuseInfo answers INFO as Redis answers a user without the
// permission; FAKE REFUSE-INFO and ClearFaults turn it off.
func TestRefuseInfo(t *testing.T) {
	n := startNode(t, Config{})
	c := dial(t, n.Addr())
	n.RefuseInfo(true)
	if got := c.do("INFO", "server"); got != "-"+infoRefusedErr+"\r\n" {
		t.Fatalf("INFO refused: %q", got)
	}
	n.ClearFaults()
	if got := c.do("INFO", "server"); !strings.Contains(got, "run_id:") {
		t.Fatalf("INFO after ClearFaults: %q", got)
	}
	if got := c.do("FAKE", "REFUSE-INFO", "on"); got != "+OK\r\n" {
		t.Fatalf("FAKE REFUSE-INFO on: %q", got)
	}
	if got := c.do("INFO"); !strings.HasPrefix(got, "-NOPERM") {
		t.Fatalf("INFO after FAKE REFUSE-INFO on: %q", got)
	}
	if got := c.do("FAKE", "REFUSE-INFO", "maybe"); !strings.HasPrefix(got, "-ERR FAKE REFUSE-INFO: want ON or OFF") {
		t.Fatalf("FAKE REFUSE-INFO maybe: %q", got)
	}
	if got := c.do("FAKE", "REFUSE-INFO", "OFF"); got != "+OK\r\n" || !strings.Contains(c.do("INFO", "server"), "run_id:") {
		t.Fatalf("FAKE REFUSE-INFO OFF: %q", got)
	}
}

// Chaos draws the data-set faults, and leaves no node refusing INFO.
func TestChaosDataSetFaults(t *testing.T) {
	cl, err := StartCluster(3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	ch := NewChaos(cl, ChaosProfile{Wipes: true, Resyncs: true, InfoRefused: true, RestartLag: true,
		MaxTTL: 50 * time.Millisecond, Every: 2 * time.Millisecond, MinFault: time.Millisecond, MaxFault: 5 * time.Millisecond, MaxImpaired: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { ch.Inject(ctx, rand.New(rand.NewPCG(1, 2))); close(done) }()
	for ctx.Err() == nil && (ch.Counts.Wipes.Load() == 0 || ch.Counts.Resyncs.Load() == 0 ||
		ch.Counts.InfoRefused.Load() == 0 || ch.Counts.RestartLag.Load() == 0) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if ch.Counts.Wipes.Load() == 0 || ch.Counts.Resyncs.Load() == 0 || ch.Counts.InfoRefused.Load() == 0 || ch.Counts.RestartLag.Load() == 0 {
		t.Fatalf("not every data-set fault was drawn in 2 s: %v", &ch.Counts)
	}
	for i, n := range cl.Nodes {
		if n.infoRefused.Load() {
			t.Fatalf("node %d still refuses INFO after the chaos ended", i)
		}
	}
}
