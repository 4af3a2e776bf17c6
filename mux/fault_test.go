package mux

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

func startFake(t testing.TB, n int, cfg fakeserver.Config) *fakeserver.Cluster {
	t.Helper()
	cl, err := fakeserver.StartCluster(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func ping(t *testing.T, c *Client, p Policy) (*Batch, Outcome, time.Duration) {
	t.Helper()
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	start := time.Now()
	out, err := c.Do(context.Background(), b, p)
	if err != nil {
		t.Fatal(err)
	}
	return b, out, time.Since(start)
}

func TestFakeCore(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	runCore(t, c)
}

func TestFakeQuorumEarlySlowNode(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	n := cl.Nodes[2]
	testQuorumEarly(t, c, func() { n.SetLatency(300*time.Millisecond, 0) }, func() { n.SetLatency(0, 0) }, 2)
}

func TestFakeBlackholeTimeoutThenReconnect(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.Timeout = 80 * time.Millisecond
		cfg.HardTimeout = 200 * time.Millisecond
		cfg.DialTimeout = 150 * time.Millisecond
	})
	cl.Nodes[1].Blackhole()
	sawTimeout, sawDown := false, false
	for k := 0; k < 40 && !(sawTimeout && sawDown); k++ {
		b, out, d := ping(t, c, Policy{})
		if out.Successes != 4 || out.Failures != 1 {
			t.Fatalf("batch %d: %+v", k, out)
		}
		err := b.Err(1)
		switch {
		case errors.Is(err, ErrTimeout):
			sawTimeout = true
			if d < 70*time.Millisecond {
				t.Fatalf("timeout after %v, before the deadline: %v", d, err)
			}
		case errors.Is(err, ErrNodeDown):
			if !sawTimeout {
				t.Fatalf("down before any timeout: %v", err)
			}
			sawDown = true
		default:
			t.Fatalf("batch %d: blackholed node: %v", k, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawTimeout || !sawDown {
		t.Fatalf("timeout seen %v, node marked down after HardTimeout %v", sawTimeout, sawDown)
	}
	if c.NodeUp(1) {
		t.Fatal("NodeUp(1) true while blackholed")
	}
	cl.Nodes[1].Heal()
	waitAllOK(t, c, 3*time.Second)
	if !c.NodeUp(1) {
		t.Fatal("NodeUp(1) false after reconnection")
	}
}

func TestFakeDownFailsFast(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.Timeout = 2 * time.Second
		cfg.ReconnectMin = 200 * time.Millisecond
	})
	cl.Nodes[3].Down()
	for k := 0; k < 10; k++ {
		b, out, _ := ping(t, c, Policy{})
		if out.Successes != 4 || out.Failures != 1 {
			t.Fatalf("batch %d: %+v", k, out)
		}
		err := b.Err(3)
		if !errors.Is(err, ErrNodeDown) && !errors.Is(err, ErrConnBroken) {
			t.Fatalf("batch %d: down node: %v", k, err)
		}
		if k >= 1 && !errors.Is(err, ErrNodeDown) {
			t.Fatalf("batch %d: the connection has seen the node go: %v", k, err)
		}
		// Down or broken, not ErrTimeout: the call did not wait for the
		// down node's 2s deadline (the error says it, not a clock).
	}
	cl.Nodes[3].Up()
	waitAllOK(t, c, 3*time.Second)
}

func TestFakeRestartRedial(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	waitAllOK(t, c, time.Second)
	if err := cl.Nodes[0].Restart(true, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitAllOK(t, c, 3*time.Second)
	// The restarted node lost its script cache; the redial loaded the
	// scripts again, and the lock path works.
	testAllReplies(t, c)
}

func TestFakeMalformedReply(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	cl.Nodes[4].MalformNext(1)
	b, out, _ := ping(t, c, Policy{})
	if out.Successes != 4 || out.Failures != 1 {
		t.Fatalf("%+v", out)
	}
	err := b.Err(4)
	var pe *resp.ProtocolError
	if !errors.Is(err, ErrProtocol) || !errors.As(err, &pe) {
		t.Fatalf("malformed node: %v", err)
	}
	for i := 0; i < 4; i++ {
		if b.Err(i) != nil {
			t.Fatalf("node %d: %v", i, b.Err(i))
		}
	}
	waitAllOK(t, c, 3*time.Second)
}

func TestFakeAuth(t *testing.T) {
	const pw = "fake-pass-123"
	cl := startFake(t, 5, fakeserver.Config{Password: pw, Users: map[string]string{"alice": "alice-pw"}})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Password = pw })
	testAllReplies(t, c)
	acl := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Username = "alice"; cfg.Password = "alice-pw"; cfg.RESP3 = true })
	testAllReplies(t, acl)
	bad := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Password = "nope" + pw })
	checkAuthFailed(t, bad, pw)
}

// TestCloseInFlight: calls waiting on a blackholed node return ErrClosed
// as soon as Close runs: the one reading for the others (the token's
// holder) and the followers, with a ctx that can end (they select on it)
// and without one (they wait on their batch alone; Close wakes them).
func TestCloseInFlight(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	cl.Nodes[0].Blackhole()
	defer cl.Nodes[0].Heal()
	const callers = 16
	done := make(chan error, callers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range callers {
		cctx := context.Background()
		if i%2 == 1 {
			cctx = ctx
		}
		go func() {
			b := c.NewBatch()
			b.Broadcast(resp.AppendCommand(nil, "PING"))
			_, err := c.Do(cctx, b, Policy{Timeout: 30 * time.Second})
			done <- err
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	limit := time.After(10 * time.Second) // far below the calls' 30 s
	for range callers {
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("in-flight call: %v", err)
			}
		case <-limit:
			t.Fatal("an in-flight call did not return after Close")
		}
	}
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
}

func TestBadConfigAndBatch(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Addrs: []string{"nohostport"}},
		{Addrs: []string{"127.0.0.1:0"}},
		{Addrs: make([]string, 65)},
		{Addrs: []string{"127.0.0.1:1"}, Scripts: []Script{{Text: "return 1", SHA: "deadbeef"}}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%v): %v", cfg.Addrs, err)
		}
	}
	cl := startFake(t, 2, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	other := newBatch(3)
	other.Broadcast(resp.AppendCommand(nil, "PING"))
	if _, err := c.Do(context.Background(), other, Policy{}); !errors.Is(err, ErrBadBatch) {
		t.Fatal(err)
	}
	b := c.NewBatch()
	if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrBadBatch) {
		t.Fatal("empty batch:", err)
	}
	b.Add(0, []byte("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n")) // two frames
	if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrBadBatch) {
		t.Fatal("two frames:", err)
	}
	// What Redis would answer with nothing (an empty array) or with a
	// protocol error and a closed connection is refused before it is sent.
	for _, cmd := range []string{"*0\r\n", "*-1\r\n", "*1\r\n:1\r\n", "*1\r\n*1\r\n$1\r\nx\r\n", "*1\r\n$-1\r\n", "*1\r\n+PING\r\n"} {
		b.Reset()
		b.Add(0, []byte(cmd))
		if _, err := c.Do(context.Background(), b, Policy{}); !errors.Is(err, ErrBadBatch) {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.Reset()
	b.Add(1, resp.AppendCommand(nil, "PING"))
	if out, err := c.Do(ctx, b, Policy{}); !errors.Is(err, context.Canceled) || out != (Outcome{}) {
		t.Fatal("cancelled ctx:", err)
	}
	// Only node 1 has a command: node 0 is neither success nor failure.
	out, err := c.Do(context.Background(), b, Policy{})
	if err != nil || out.Successes != 1 || out.Failures != 0 {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := b.Last(0); !errors.Is(err, ErrBadBatch) {
		t.Fatal("Last of a node without commands:", err)
	}
}

// TestUnreachableAtNew: a node nobody listens on is down from the start,
// calls fail on it at once, and New still succeeds.
func TestUnreachableAtNew(t *testing.T) {
	cl := startFake(t, 2, fakeserver.Config{})
	addrs := append(cl.Addrs(), "127.0.0.1:1")
	c := newTestClient(t, addrs, nil)
	b, out, _ := ping(t, c, Policy{Quorum: 2})
	if out.Successes != 2 || !errors.Is(b.Err(2), ErrNodeDown) || c.NodeUp(2) || c.NodeErr(2) == nil {
		t.Fatalf("%+v %v", out, b.Err(2))
	}
}

// A partitioned node (it accepts connections but never answers, so every
// redial of it hangs until DialTimeout) must not hold up another node's
// redial: each node has its own supervisor.
func TestFakePartitionedNodeDoesNotDelayOtherRedials(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) {
		cfg.DialTimeout = 5 * time.Second
		cfg.Timeout = 200 * time.Millisecond
	})
	waitAllOK(t, c, time.Second)
	// Node 0: drop its connections, then accept new ones without answering.
	cl.Nodes[0].Blackhole()
	cl.Nodes[0].Down()
	for k := 0; k < 2; k++ { // the connection notices
		ping(t, c, Policy{})
	}
	cl.Nodes[0].Up() // still blackholed: node 0's redials now hang for 5s
	defer cl.Nodes[0].Heal()
	time.Sleep(100 * time.Millisecond)

	if err := cl.Nodes[1].Restart(false, 0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		b, _, _ := ping(t, c, Policy{})
		if b.Err(1) == nil && b.Err(2) == nil {
			break
		}
		// Functional bound, below node 0's 5s dial timeout that a shared
		// redial loop would have made node 1 wait behind.
		if time.Since(start) > 4*time.Second {
			t.Fatalf("node 1 not back after %v: %v", time.Since(start), b.Err(1))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := func() error { b, _, _ := ping(t, c, Policy{}); return b.Err(0) }(); err == nil {
		t.Fatal("node 0 is partitioned and must still fail")
	}
}

// Batches with the same key use the same connection to each node; keys
// spread over the connections.
func TestKeyRouting(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Conns = 4 })
	pick := func(key string) int {
		b := c.NewBatch()
		b.SetKey(key)
		return int(b.route % uint32(c.cfg.Conns))
	}
	used := map[int]bool{}
	for k := 0; k < 64; k++ {
		key := "key-" + string(rune('a'+k%26)) + string(rune('a'+k/26))
		if first, again := pick(key), pick(key); first != again {
			t.Fatal("one key, two connections")
		}
		used[pick(key)] = true
	}
	if len(used) != c.cfg.Conns {
		t.Fatalf("64 keys used %d of %d connections", len(used), c.cfg.Conns)
	}
	// Commands of one key travel in order: SET then GET of the same key
	// from two batches (the GET's batch queued after the SET's returned
	// at quorum) always see the SET.
	for k := 0; k < 200; k++ {
		key := uniqueKey("route")
		b := c.NewBatch()
		b.SetKey(key)
		b.Broadcast(resp.AppendCommand(nil, "SET", key, "v"))
		if _, err := c.Do(context.Background(), b, Policy{Quorum: 1}); err != nil {
			t.Fatal(err)
		}
		b.Reset()
		b.Broadcast(resp.AppendCommand(nil, "GET", key))
		out, err := c.Do(context.Background(), b, Policy{})
		if err != nil || out.Successes != 3 {
			t.Fatalf("%+v %v", out, err)
		}
		for i := 0; i < 3; i++ {
			if r, _ := b.Last(i); string(r.Data) != "v" {
				t.Fatalf("round %d node %d: GET overtook its SET: %v", k, i, r)
			}
		}
	}
}
