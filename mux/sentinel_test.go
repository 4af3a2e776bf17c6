package mux

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
)

// TestSentinelDiscovery points a client at a Sentinel service (sentinels
// and primary with passwords of their own): it finds the primary, checks
// it by ROLE, and its commands land there; then each bad input or fault is
// a clear node error (naming the node and the cause, never a password),
// and none hangs: a wrong master name, a wrong sentinel password, no
// sentinel reachable, a sentinel that never answers, one that names the
// replica (sentinels that disagree: the first named process that answers
// ROLE master wins).
func TestSentinelDiscovery(t *testing.T) {
	const pw, spw = "data-secret", "sent-secret"
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{Password: pw, SentinelPassword: spw})
	primary, replica := g.Data[0], g.Data[1]
	good := "&sentinel_password=" + spw
	short := func(cfg *Config) { cfg.DialTimeout = 300 * time.Millisecond; cfg.Incarnations = true }

	c := newTestClient(t, []string{sentinelURL(g, ":"+pw+"@", nil, good)}, short)
	key := uniqueKey("sentinel")
	if err := setNode0(c, key, "v1"); err != nil {
		t.Fatalf("SET through the sentinels: %v", err)
	}
	if v := getOn(t, primary.Addr, pw, key); v != "v1" {
		t.Fatalf("the key on the primary: %v", v)
	}
	if c.Primary(0) != primary.Addr {
		t.Fatalf("Primary(0) = %q, want %s", c.Primary(0), primary.Addr)
	}
	if inc := c.Incarnation(0); inc == nil || !inc.Known || inc.Role != "master" {
		t.Fatalf("incarnation %+v", inc)
	}
	if a := c.Addrs()[0]; strings.Contains(a, "secret") || !strings.Contains(a, "sentinelMasterId="+g.Name) {
		t.Fatalf("Addrs()[0] = %q", a)
	}
	t.Logf("node 0: %s, primary %s", c.Addrs()[0], c.Primary(0))

	// down checks that node 0 of a client for addr is down with a cause
	// that wraps ErrSentinel and holds every want, and that New took less
	// than within.
	down := func(t *testing.T, addr string, within time.Duration, want ...string) {
		t.Helper()
		start := time.Now()
		c := newTestClient(t, []string{addr}, short)
		took := time.Since(start)
		if took > within {
			t.Errorf("New took %v, want < %v", took, within)
		}
		err := c.NodeErr(0)
		if err == nil {
			t.Fatalf("node up (primary %s), want down", c.Primary(0))
		}
		msg := err.Error()
		if !errors.Is(err, ErrNodeDown) || !errors.Is(err, ErrSentinel) || !strings.Contains(msg, "node 0 (") {
			t.Errorf("%v: want ErrNodeDown and ErrSentinel naming node 0", err)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: want %q in it", err, w)
			}
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("a password in %q", msg)
		}
		if setNode0(c, uniqueKey("down"), "x") == nil {
			t.Errorf("a call succeeded on a node that is down")
		}
		t.Logf("%v (New in %v)", err, took.Round(time.Millisecond))
	}
	t.Run("wrong master name", func(t *testing.T) {
		u := strings.Replace(sentinelURL(g, ":"+pw+"@", nil, good), "sentinelMasterId="+g.Name, "sentinelMasterId=nope", 1)
		down(t, u, 3*time.Second, `does not know sentinelMasterId "nope"`, "from 3 sentinel(s)")
	})
	t.Run("wrong sentinel password", func(t *testing.T) {
		u := sentinelURL(g, ":"+pw+"@", nil, "&sentinel_password=wrong-secret")
		c := newTestClient(t, []string{u}, short)
		if err := c.NodeErr(0); !errors.Is(err, ErrAuth) || !errors.Is(err, ErrSentinel) || strings.Contains(err.Error(), "secret") {
			t.Fatalf("%v: want ErrAuth and ErrSentinel, no password", err)
		}
	})
	t.Run("no sentinel reachable", func(t *testing.T) {
		u := sentinelURL(g, ":"+pw+"@", []string{closedPort(t), closedPort(t), closedPort(t)}, good)
		down(t, u, 3*time.Second, "connection refused")
	})
	t.Run("sentinel hangs", func(t *testing.T) {
		// the hanging one first: DialTimeout, then the next one
		start := time.Now()
		sents := append([]string{fakeSentinel(t, "")}, g.SentinelAddrs()...)
		c := newTestClient(t, []string{sentinelURL(g, ":"+pw+"@", sents, good)}, short)
		took := time.Since(start)
		if !c.NodeUp(0) || c.Primary(0) != primary.Addr || took > 3*time.Second {
			t.Fatalf("up %v (%v), primary %q, New in %v", c.NodeUp(0), c.NodeErr(0), c.Primary(0), took)
		}
		only := sentinelURL(g, ":"+pw+"@", sents[:1], good)
		down(t, only, 3*time.Second, "no reply within DialTimeout")
	})
	t.Run("sentinel names the replica", func(t *testing.T) {
		liar := fakeSentinel(t, addrReply(replica.Addr))
		sents := append([]string{liar}, g.SentinelAddrs()...)
		c := newTestClient(t, []string{sentinelURL(g, ":"+pw+"@", sents, good)}, short)
		if !c.NodeUp(0) || c.Primary(0) != primary.Addr {
			t.Fatalf("up %v (%v), primary %q, want %s", c.NodeUp(0), c.NodeErr(0), c.Primary(0), primary.Addr)
		}
		down(t, sentinelURL(g, ":"+pw+"@", []string{liar}, good), 3*time.Second,
			"names "+replica.Addr, "ROLE slave, not master")
	})
	t.Run("not a sentinel", func(t *testing.T) {
		down(t, sentinelURL(g, ":"+pw+"@", []string{primary.Addr}, ""), 3*time.Second, "is it a sentinel?")
	})
}

// TestSentinelFailover: the primary is paused (SIGSTOP), the sentinels
// promote the replica, and the client follows: its calls go to the new
// primary (the key is there), the node's incarnation is the promoted
// one; once the old primary is back as a replica the client stays on the
// new one. The time from the pause to the sentinels' switch and to the
// client's first call on the new primary is logged
// (REDMUX_SENTINEL_FAILOVERS=n repeats it n times for the figures in
// results/operations; REDMUX_SENTINEL_WATCH=0 turns the +switch-master
// watcher off, to measure the redial on errors alone).
func TestSentinelFailover(t *testing.T) {
	runs := 1
	if v := os.Getenv("REDMUX_SENTINEL_FAILOVERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("REDMUX_SENTINEL_FAILOVERS=%q", v)
		}
		runs = n
	}
	if os.Getenv("REDMUX_SENTINEL_WATCH") == "0" {
		sentinelWatchOff.Store(true)
		defer sentinelWatchOff.Store(false)
	}
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) {
		cfg.Incarnations = true
		cfg.DialTimeout = 500 * time.Millisecond
	})
	var switchT, followT []time.Duration
	lastFailover := time.Time{}
	for run := 0; run < runs; run++ {
		old, err := g.Primary()
		if err != nil {
			t.Fatal(err)
		}
		if err := setNode0(c, uniqueKey("before"), "x"); err != nil || c.Primary(0) != old.Addr {
			t.Fatalf("run %d: before: %v, primary %q, want %s", run, err, c.Primary(0), old.Addr)
		}
		inc0 := c.Incarnation(0)
		// a sentinel starts no failover of a primary within 2 x
		// failover-timeout (3 s) of the last one
		if wait := 6500*time.Millisecond - time.Since(lastFailover); wait > 0 && run > 0 {
			time.Sleep(wait)
		}
		start := time.Now()
		if err := old.Pause(); err != nil {
			t.Fatal(err)
		}
		var nw *redisproc.Server
		var switched time.Duration
		done := make(chan error, 1)
		go func() {
			var err error
			nw, err = g.WaitFailover(old, 60*time.Second)
			switched = time.Since(start)
			done <- err
		}()
		// calls until one lands on a primary other than the old one
		var followed time.Duration
		key := uniqueKey("after")
		errs := 0
		for k := 0; ; k++ {
			if time.Since(start) > 60*time.Second {
				t.Fatalf("run %d: not followed within 60 s (%d errors; node error %v)", run, errs, c.NodeErr(0))
			}
			if err := setNode0(c, key, strconv.Itoa(k)); err == nil && c.Primary(0) != old.Addr {
				followed = time.Since(start)
				break
			} else if err != nil {
				errs++
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := <-done; err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		lastFailover = start
		if c.Primary(0) != nw.Addr {
			t.Fatalf("run %d: client on %s, sentinels on %s", run, c.Primary(0), nw.Addr)
		}
		if getOn(t, nw.Addr, "", key) == nil {
			t.Fatalf("run %d: key not on the new primary", run)
		}
		inc := c.Incarnation(0)
		if inc == nil || inc.Same(inc0) || !inc.Promoted || inc.Role != "master" {
			t.Fatalf("run %d: incarnation %+v after %+v", run, inc, inc0)
		}
		switchT = append(switchT, switched)
		followT = append(followT, followed)
		t.Logf("run %d: %s -> %s: sentinels switched %v after the pause, client followed %v after it (%d calls failed meanwhile)",
			run, old.Addr, nw.Addr, switched.Round(time.Millisecond), followed.Round(time.Millisecond), errs)
		if err := g.Rejoin(old, nw, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		// the old primary is back (a replica): the client stays
		if err := setNode0(c, uniqueKey("rejoined"), "y"); err != nil || c.Primary(0) != nw.Addr {
			t.Fatalf("run %d: after the rejoin: %v, primary %q", run, err, c.Primary(0))
		}
	}
	if runs > 1 {
		t.Logf("%d failovers: sentinels switched %s; client followed %s (min/median/max after the pause)", runs, spread(switchT), spread(followT))
	}
}

// TestSentinelReadOnly: the primary is made a replica behind the
// sentinels' back (REPLICAOF, which keeps its clients connected): the
// next write gets READONLY, the connection is replaced, and the redial
// refuses the process (ROLE slave) until it is a primary again.
func TestSentinelReadOnly(t *testing.T) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	other := redistest.Start(t, redistest.Options{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) { cfg.DialTimeout = 500 * time.Millisecond })
	p := g.Data[0]
	if err := setNode0(c, uniqueKey("ro"), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := redisproc.Command(p.Addr, "", "REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port)); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = redisproc.Command(p.Addr, "", "REPLICAOF", "NO", "ONE") }()
	err := setNode0(c, uniqueKey("ro"), "x")
	var se *ServerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.Text, "READONLY") {
		t.Fatalf("write to the demoted primary: %v, want READONLY", err)
	}
	// the node goes down for the READONLY, then its redial is refused
	// (ROLE slave); between the two it may read "redial in progress"
	end := time.Now().Add(5 * time.Second)
	isCause := func(ne error) bool {
		return ne != nil && (strings.Contains(ne.Error(), "READONLY") || strings.Contains(ne.Error(), "ROLE slave"))
	}
	for !isCause(c.NodeErr(0)) && time.Now().Before(end) {
		time.Sleep(5 * time.Millisecond)
	}
	ne := c.NodeErr(0)
	if !isCause(ne) {
		t.Fatalf("node after READONLY: up %v, error %v", c.NodeUp(0), ne)
	}
	t.Logf("after READONLY: %v", ne)
	// the redial asks the sentinels, who still name p: ROLE refuses it
	for time.Now().Before(end) && !strings.Contains(errText(c.NodeErr(0)), "ROLE slave") {
		time.Sleep(10 * time.Millisecond)
	}
	if ne := c.NodeErr(0); !errors.Is(ne, ErrSentinel) || !strings.Contains(ne.Error(), "ROLE slave") {
		t.Fatalf("redial to the demoted process: %v", ne)
	}
	if _, err := redisproc.Command(p.Addr, "", "REPLICAOF", "NO", "ONE"); err != nil {
		t.Fatal(err)
	}
	end = time.Now().Add(10 * time.Second)
	for setNode0(c, uniqueKey("ro"), "x") != nil {
		if time.Now().After(end) {
			t.Fatalf("not back after REPLICAOF NO ONE: %v", c.NodeErr(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSentinelSwitchWatch: a client idle through a failover (its
// connection to the paused primary owes nothing, so nothing replaces it)
// must not stay with the old primary once it is resumed: it still answers
// as a primary until the sentinels demote it at their next INFO to it (up
// to 10 s), and would grant what the new one grants too. The
// +switch-master watcher replaces the connection; with it off
// (REDMUX_SENTINEL_WATCH=0) the write lands on the old primary, which the
// test then reports instead of failing.
func TestSentinelSwitchWatch(t *testing.T) {
	off := os.Getenv("REDMUX_SENTINEL_WATCH") == "0"
	if off {
		sentinelWatchOff.Store(true)
		defer sentinelWatchOff.Store(false)
	}
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) { cfg.DialTimeout = 500 * time.Millisecond })
	old := g.Data[0]
	if err := setNode0(c, uniqueKey("idle"), "x"); err != nil || c.Primary(0) != old.Addr {
		t.Fatalf("before: %v, primary %q", err, c.Primary(0))
	}
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	nw, err := g.WaitFailover(old, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Resume(); err != nil { // no REPLICAOF: the sentinels demote it later
		t.Fatal(err)
	}
	if v, err := redisproc.Command(old.Addr, "", "ROLE"); err == nil {
		t.Logf("old primary resumed, ROLE %v", v)
	}
	key := uniqueKey("after")
	end := time.Now().Add(5 * time.Second)
	for setNode0(c, key, "y") != nil && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	onOld := getOn(t, old.Addr, "", key) != nil && getOn(t, nw.Addr, "", key) == nil
	if off {
		t.Logf("watcher off: the write landed on the old primary: %v (client on %s)", onOld, c.Primary(0))
		return
	}
	if onOld || c.Primary(0) != nw.Addr || getOn(t, nw.Addr, "", key) == nil {
		t.Fatalf("the write after the failover: on the old primary %v, client on %s, want %s", onOld, c.Primary(0), nw.Addr)
	}
}
