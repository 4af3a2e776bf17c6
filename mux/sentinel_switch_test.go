package mux

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

// Issue 45: a Sentinel node's connection is to the primary its sentinels'
// majority names, never to one they replaced, however the client meets
// the old one: a set-up under way when the switch came (a), a sentinel
// that names the old one after the switch (b), a watcher whose sentinel
// hangs (c). Each test writes to node 0 every 10 ms through the switch
// and then looks where the writes landed, before the sentinels turn the
// old primary into a replica (their INFO to it, about 10 s after the
// switch), which would copy the new one's keys onto it.

// switchWrites writes a new key to node 0 of c every 10 ms until stop is
// closed, and returns the keys whose write succeeded with when.
type acked struct {
	key string
	at  time.Time
}

func switchWrites(c *Client, stop <-chan struct{}) func() []acked {
	var mu sync.Mutex
	var out []acked
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			key := uniqueKey("sw-" + strconv.Itoa(k))
			if setNode0(c, key, "v") == nil {
				mu.Lock()
				out = append(out, acked{key, time.Now()})
				mu.Unlock()
			}
		}
	}()
	return func() []acked {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// namedBy waits until every sentinel of among names a primary other than
// old, and returns it and when.
func namedBy(t *testing.T, g *redisproc.SentinelGroup, among []*redisproc.Server, old *redisproc.Server) (string, time.Time) {
	t.Helper()
	named, at, err := g.WaitNamed(among, old, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return named, at
}

// checkLanded fails t if a write acknowledged after switched (plus
// follow, the time the client may take to follow) is on the old primary,
// or if none after it reached the new one.
func checkLanded(t *testing.T, writes []acked, oldAddr, newAddr string, switched time.Time, follow time.Duration) {
	t.Helper()
	onNew, onOld := 0, 0
	var firstNew time.Time
	for _, w := range writes {
		if !w.at.After(switched) {
			continue
		}
		if getOn(t, oldAddr, "", w.key) != nil {
			onOld++
			if w.at.After(switched.Add(follow)) {
				t.Errorf("a write acknowledged %v after the switch is on the old primary %s", w.at.Sub(switched).Round(time.Millisecond), oldAddr)
			}
		}
		if getOn(t, newAddr, "", w.key) != nil {
			if onNew == 0 {
				firstNew = w.at
			}
			onNew++
		}
	}
	if onNew == 0 {
		t.Fatalf("no write after the switch reached the new primary %s (%d on the old)", newAddr, onOld)
	}
	t.Logf("after the switch: %d writes on the new primary, the first %v after it; %d on the old one", onNew, firstNew.Sub(switched).Round(time.Millisecond), onOld)
}

// (a) The primary is paused; the client's connection to it times out and
// is dialled again, and that set-up hangs on the paused process (a long
// DialTimeout); the sentinels promote the replica; the old primary is
// resumed at once and the set-up under way completes with ROLE master.
// It must not be kept: a majority of the sentinels name another process,
// and the switch was announced while it ran (issue 45: 17 overlaps in one
// run).
func TestSentinelResumedPrimaryNotKept(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) {
		cfg.DialTimeout = 4 * time.Second // a set-up to the paused primary lasts through the switch
		cfg.HardTimeout = 200 * time.Millisecond
		cfg.ReconnectMin, cfg.ReconnectMax = 10*time.Millisecond, 50*time.Millisecond
	})
	old := g.Data[0]
	if err := setNode0(c, uniqueKey("a"), "x"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	collect := switchWrites(c, stop)
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	nw, switched := namedBy(t, g, g.Sentinels, old)
	if err := old.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	close(stop)
	checkLanded(t, collect(), old.Addr, nw, switched, 0)
}

// (c) The sentinel the switch watcher listens to hangs (SIGSTOP) and the
// others fail the primary over (SENTINEL FAILOVER): the watcher's PING
// goes unanswered, it moves to the next sentinel, and the client follows
// within 2 s (issue 45: it stayed 11.1 s on the old primary, 202 overlaps
// in 408 acquisitions). The old primary is paused through the failover
// and resumed at once, so that it still answers as a primary.
func TestSentinelHungWatcher(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) {
		cfg.DialTimeout = 500 * time.Millisecond
		cfg.ReconnectMin, cfg.ReconnectMax = 10*time.Millisecond, 50*time.Millisecond
	})
	old := g.Data[0]
	if err := setNode0(c, uniqueKey("c"), "x"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the watcher subscribed to sentinel 0
	hung := g.Sentinels[0]
	if err := hung.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hung.Resume() }()
	stop := make(chan struct{})
	collect := switchWrites(c, stop)
	if _, err := redisproc.Command(g.Sentinels[1].Addr, "", "SENTINEL", "FAILOVER", g.Name); err != nil {
		t.Fatal(err)
	}
	nw, switched := namedBy(t, g, g.Sentinels[1:], old)
	time.Sleep(3 * time.Second)
	close(stop)
	checkLanded(t, collect(), old.Addr, nw, switched, 2*time.Second)
}

// (b) A sentinel that has not caught up with the failover names the old
// primary (here one that keeps naming it: the first in the node's list),
// and the old primary, paused through the failover and resumed, answers
// ROLE master. A client that asks that sentinel first must not take the
// old primary: a majority of the sentinels names the new one (issue 45:
// one client stayed 10.1 s on the old primary, 5 overlaps).
func TestSentinelLaggingSentinelNotTrusted(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	old := g.Data[0]
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	nw, _ := namedBy(t, g, g.Sentinels, old)
	if err := old.Resume(); err != nil {
		t.Fatal(err)
	}
	lagging := fakeSentinel(t, addrReply(old.Addr))
	c := newTestClient(t, []string{sentinelURL(g, "", append([]string{lagging}, g.SentinelAddrs()...), "")},
		func(cfg *Config) { cfg.DialTimeout = 500 * time.Millisecond })
	key := uniqueKey("b")
	if err := setNode0(c, key, "x"); err != nil {
		t.Fatalf("first write: %v (node error %v)", err, c.NodeErr(0))
	}
	if c.Primary(0) != nw || getOn(t, old.Addr, "", key) != nil {
		t.Fatalf("the client took %s, the write on the old primary: %v; want %s", c.Primary(0), getOn(t, old.Addr, "", key) != nil, nw)
	}
}

// A sentinel that accepts and never answers (a hung process, a partition
// that drops replies), last in the node's list, and a SENTINEL FAILOVER
// by the others: they are a majority, and the client must follow the
// switch without waiting for the third up to DialTimeout, 20 s here
// (issue 45: every set-up and every switch check waited the whole
// DialTimeout on it, so clients followed a switch 2.8-3.3 s late beside a
// hung sentinel with the default 1 s).
func TestSentinelHungSentinelNotWaited(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	hung := silentListener(t)
	c := newTestClient(t, []string{sentinelURL(g, "", append(g.SentinelAddrs()[:2:2], hung), "")},
		func(cfg *Config) { cfg.DialTimeout = 20 * time.Second })
	old := g.Data[0]
	if err := setNode0(c, uniqueKey("hung"), "x"); err != nil {
		t.Fatalf("first write: %v (node error %v)", err, c.NodeErr(0))
	}
	if _, err := redisproc.Command(g.Sentinels[0].Addr, "", "SENTINEL", "FAILOVER", g.Name); err != nil {
		t.Fatal(err)
	}
	nw, switched := namedBy(t, g, g.Sentinels[:2], old)
	for end := time.Now().Add(10 * time.Second); c.Primary(0) != nw; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("still on %s 10 s after the switch to %s beside a hung sentinel (DialTimeout 20 s; node error %v)", c.Primary(0), nw, c.NodeErr(0))
		}
		_ = setNode0(c, uniqueKey("hung"), "x")
	}
	t.Logf("followed %v after the switch, beside a hung sentinel", time.Since(switched).Round(time.Millisecond))
}

// silentListener accepts connections and never reads or answers: a hung
// process (its kernel still accepts), for as long as the test runs.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().String()
}
