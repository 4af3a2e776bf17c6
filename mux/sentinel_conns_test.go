package mux

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// portOn runs INFO server on connection k of node 0 of c and returns the
// tcp_port of the process that answered.
func portOn(c *Client, k int) (int, error) {
	b := c.NewBatch()
	b.route = uint32(k)
	b.Add(0, resp.AppendCommand(nil, "INFO", "server"))
	if _, err := c.Do(context.Background(), b, Policy{Timeout: 300 * time.Millisecond}); err != nil {
		return 0, err
	}
	r, err := b.Last(0)
	if err != nil {
		return 0, err
	}
	_, rest, ok := strings.Cut(string(r.Data), "tcp_port:")
	if !ok {
		return 0, fmt.Errorf("no tcp_port in INFO server: %q", r.Data)
	}
	port, _, _ := strings.Cut(rest, "\r\n")
	return strconv.Atoi(port)
}

// echoTally is what echoers' callers saw: replies that came, calls that
// failed, and replies that were not their call's value.
type echoTally struct {
	ok, failed int
	wrong      []string
}

// echoers runs n callers of ECHO on node 0 of c, each of a value of its
// own per call (routed by it, so over every connection), until stop is
// closed or each made max calls; wait waits for them and returns their
// tally.
func echoers(c *Client, n, max int, timeout time.Duration, stop <-chan struct{}) (wait func() echoTally) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var tl echoTally
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBatch()
			for k := 0; k < max; k++ {
				select {
				case <-stop:
					return
				default:
				}
				v := "echo:" + strconv.Itoa(g) + ":" + strconv.Itoa(k)
				b.Reset()
				b.SetKey(v)
				b.Add(0, resp.AppendCommand(nil, "ECHO", v))
				_, err := c.Do(context.Background(), b, Policy{Timeout: timeout})
				r, rerr := b.Last(0)
				mu.Lock()
				switch {
				case err == nil && rerr == nil && string(r.Data) != v:
					tl.wrong = append(tl.wrong, fmt.Sprintf("ECHO %s answered %q", v, r.Data))
				case err == nil && rerr == nil:
					tl.ok++
				default:
					tl.failed++
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return func() echoTally {
		wg.Wait()
		return tl
	}
}

// TestSentinelFailoverEveryConn: a Sentinel node with Conns = 3 (and 1):
// every connection is served by the primary; through a failover done as
// TestSentinelFailover does it, 16 callers' ECHOs get their own values or
// an error, never another call's reply; every connection moves to the new
// primary; once the old primary is back (a replica, which answers reads)
// no connection is served by it, and every caller's call succeeds on the
// new one.
func TestSentinelFailoverEveryConn(t *testing.T) {
	for _, conns := range []int{1, 3} {
		t.Run("Conns="+strconv.Itoa(conns), func(t *testing.T) { testSentinelFailoverConns(t, conns) })
	}
}

func testSentinelFailoverConns(t *testing.T, conns int) {
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) {
		cfg.Conns = conns
		cfg.DialTimeout = 500 * time.Millisecond
	})
	old, err := g.Primary()
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < conns; k++ {
		if port, err := portOn(c, k); err != nil || port != old.Port {
			t.Fatalf("connection %d before the failover: port %d, %v; want the primary's %d", k, port, err, old.Port)
		}
	}
	stop := make(chan struct{})
	wait := echoers(c, 16, 100000, 300*time.Millisecond, stop)
	stopEchoes := sync.OnceValue(func() echoTally {
		close(stop)
		return wait()
	})
	defer stopEchoes()
	start := time.Now()
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	nw, err := g.WaitFailover(old, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < conns; k++ {
		for {
			port, err := portOn(c, k)
			if err == nil && port == nw.Port {
				break
			}
			if err == nil || time.Since(start) > 60*time.Second {
				t.Fatalf("connection %d after the failover: port %d, %v; want the new primary's %d", k, port, err, nw.Port)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	followed := time.Since(start)
	if err := g.Rejoin(old, nw, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		for k := 0; k < conns; k++ {
			if port, err := portOn(c, k); err != nil || port != nw.Port {
				t.Fatalf("round %d, connection %d after the rejoin: port %d, %v; want the new primary's %d (old %d)",
					round, k, port, err, nw.Port, old.Port)
			}
		}
	}
	tl := stopEchoes()
	if len(tl.wrong) > 0 || tl.ok == 0 {
		t.Fatalf("through the failover: %d replies, %d failed calls, %d misattributed: %v", tl.ok, tl.failed, len(tl.wrong), tl.wrong)
	}
	t.Logf("Conns %d: %d -> %d, every connection followed %v after the pause; %d ECHOs answered, %d failed meanwhile",
		conns, old.Port, nw.Port, followed.Round(time.Millisecond), tl.ok, tl.failed)
	if tl := echoers(c, 16, 20, 5*time.Second, nil)(); tl.ok != 16*20 || tl.failed != 0 || len(tl.wrong) > 0 {
		t.Fatalf("after the rejoin: %d of %d ECHOs answered, %d failed, misattributed %v", tl.ok, 16*20, tl.failed, tl.wrong)
	}
}

// TestSentinelSwitchWatchEveryConn is TestSentinelSwitchWatch with Conns =
// 3: every connection carried a command to the primary, then all stay
// idle through the failover (none owes a reply, so none breaks), and the
// old primary is resumed without REPLICAOF (it answers as a primary until
// the sentinels demote it). The +switch-master watcher must replace every
// connection, not only one: on each, the first command answered after the
// failover is answered by the new primary.
func TestSentinelSwitchWatchEveryConn(t *testing.T) {
	const conns = 3
	g := redistest.StartSentinelGroup(t, redistest.SentinelOptions{})
	c := newTestClient(t, []string{sentinelURL(g, "", nil, "")}, func(cfg *Config) {
		cfg.Conns = conns
		cfg.DialTimeout = 500 * time.Millisecond
	})
	old := g.Data[0]
	for k := 0; k < conns; k++ {
		if port, err := portOn(c, k); err != nil || port != old.Port {
			t.Fatalf("connection %d before the failover: port %d, %v; want %d", k, port, err, old.Port)
		}
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
	for k := 0; k < conns; k++ {
		port, err := portOn(c, k)
		for end := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(end); port, err = portOn(c, k) {
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil || port != nw.Port {
			t.Fatalf("connection %d after the failover: port %d, %v; want the new primary's %d (old %d)", k, port, err, nw.Port, old.Port)
		}
	}
}
