package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/resp"
)

// Issue 23: one bad or slow node, or one bad caller, never hurts the
// others. These tests count (replies, bytes, goroutines); none asserts a
// duration.

func panicOnNode1(node int, r resp.Reply) bool {
	if node == 1 {
		panic("predicate bug")
	}
	return r.IsOK()
}

// A panicking Policy.Success fails its own call with a *PanicError and
// nothing else: callers alongside it (whose replies the panicking call's
// reader may be reading, the poller included) keep getting their replies,
// later calls work, and Close returns.
func TestPolicyPanicIsTheCallsError(t *testing.T) {
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr(), startHostile(t, nil).addr()}
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Scripts = nil })
	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	var panics, goodOK, goodBad atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
			for r := 0; r < rounds; r++ {
				if w%2 == 0 {
					_, err := c.Do(context.Background(), b, Policy{Success: panicOnNode1})
					var pe *PanicError
					if errors.Is(err, ErrPolicyPanic) && errors.As(err, &pe) && pe.Node == 1 && pe.Value == "predicate bug" {
						panics.Add(1)
					}
					continue
				}
				out, err := c.Do(context.Background(), b, Policy{Success: isOK})
				if err == nil && out.Successes == 3 {
					goodOK.Add(1)
				} else {
					goodBad.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	if got, want := panics.Load(), int64(workers/2*rounds); got != want {
		t.Fatalf("%d of %d panicking calls returned a *PanicError", got, want)
	}
	if goodBad.Load() != 0 || goodOK.Load() != workers/2*rounds {
		t.Fatalf("calls beside the panicking ones: %d ok, %d failed", goodOK.Load(), goodBad.Load())
	}
	// A lone caller (it reads its own replies) too, then the client works.
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
	if _, err := c.Do(context.Background(), b, Policy{Success: panicOnNode1}); !errors.Is(err, ErrPolicyPanic) {
		t.Fatalf("lone caller: %v", err)
	}
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 3 {
		t.Fatalf("after the panics: %+v %v", out, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// A batch run again after Do returned early (ctx already cancelled, client
// closed) shows no reply of the earlier call: every node says ErrNotSent.
func TestEarlyReturnClearsResults(t *testing.T) {
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr()}
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Scripts = nil })
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "SET", "k", "v"))
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, b, Policy{Success: isOK}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	for i := 0; i < 2; i++ {
		if rep, err := b.Last(i); !errors.Is(err, ErrNotSent) {
			t.Fatalf("node %d after a cancelled re-run: %q %v (the earlier call's reply?)", i, rep.Data, err)
		}
	}
	if out, err := c.Do(context.Background(), b, Policy{Success: isOK}); err != nil || out.Successes != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	_ = c.Close()
	if _, err := c.Do(context.Background(), b, Policy{Success: isOK}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := b.Err(0); !errors.Is(err, ErrNotSent) {
		t.Fatalf("after Close: %v", err)
	}
}

// slowDrain runs workers calling SET on [fast, fast, slow] with a quorum
// of 2 until each made rounds calls (or, with soak > 0, for soak), the slow
// node answering one command per millisecond. It returns the largest
// number of outstanding slots and of queued-or-in-flight bytes seen on the
// slow node's connection, the calls where both fast nodes succeeded, the
// calls, how many slow-node failures were back-pressure, and the largest
// heap in use seen (sampled every 500 calls).
func slowDrain(t *testing.T, mod func(*Config), workers, rounds int, soak time.Duration) (maxSlots, maxBytes int, fastOK, calls, pressure int64, maxHeap uint64) {
	slow := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if c.n > 0 {
				time.Sleep(time.Millisecond)
			}
			return r
		}
	})
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr(), slow.addr()}
	c := newTestClient(t, addrs, func(cfg *Config) {
		cfg.Scripts = nil
		cfg.Conns = 1
		cfg.Timeout = 20 * time.Millisecond
		cfg.HardTimeout = 10 * time.Second // slow, not dead: never replaced
		if mod != nil {
			mod(cfg)
		}
	})
	cn := c.conns[2]
	var mu sync.Mutex
	sample := func() {
		cn.mu.Lock()
		s, b := cn.q.n, len(cn.wq)+cn.inflight
		cn.mu.Unlock()
		mu.Lock()
		maxSlots, maxBytes = max(maxSlots, s), max(maxBytes, b)
		mu.Unlock()
	}
	var n, okN, pressN atomic.Int64
	heap := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		maxHeap = max(maxHeap, ms.HeapInuse)
		mu.Unlock()
	}
	end := time.Now().Add(soak)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			b.Broadcast(resp.AppendCommand(nil, "SET", "k"+strconv.Itoa(w), "v"))
			for r := 0; soak > 0 && time.Now().Before(end) || soak == 0 && r < rounds; r++ {
				out, err := c.Do(context.Background(), b, Policy{Quorum: 2, Success: isOK})
				if err == nil && out.Successes >= 2 {
					if _, e0 := b.Last(0); e0 == nil {
						if _, e1 := b.Last(1); e1 == nil {
							okN.Add(1)
						}
					}
				}
				if e := b.Err(2); errors.Is(e, errTooManyPending) || errors.Is(e, errQueueFull) || errors.Is(e, ErrNotSent) {
					pressN.Add(1)
				}
				sample()
				if n.Add(1)%500 == 0 {
					heap()
				}
			}
		}(w)
	}
	wg.Wait()
	return maxSlots, maxBytes, okN.Load(), n.Load(), pressN.Load(), maxHeap
}

// A node that answers, slowly, holds at most MaxPending outstanding slots
// per connection: callers get back-pressure (ErrTimeout) for that node
// alone, and the other nodes answer every call.
func TestSlowNodeMaxPending(t *testing.T) {
	const cap = 64
	slots, qbytes, fastOK, calls, pressure, _ := slowDrain(t, func(cfg *Config) { cfg.MaxPending = cap }, 8, 150, 0)
	t.Logf("%d calls: %d with both fast nodes OK, %d back-pressured on the slow node; slow connection: at most %d slots, %d bytes queued", calls, fastOK, pressure, slots, qbytes)
	if slots > cap {
		t.Fatalf("%d slots outstanding, MaxPending %d", slots, cap)
	}
	if pressure == 0 {
		t.Fatal("no call met back-pressure: the test did not reach MaxPending")
	}
	// Both fast nodes answer within 20ms unless the machine stalls the
	// test (2 shared cores): allow 1 in 20 calls for that, not more.
	if fastOK < calls*19/20 {
		t.Fatalf("%d of %d calls had both fast nodes' replies: the slow node held them back", fastOK, calls)
	}
}

// The figure for the issue: a slow-draining node for REDMUX_SLOWDRAIN
// (e.g. 60s) with the default caps; logs the largest heap in use.
func TestSlowDrainHeapSoak(t *testing.T) {
	d, _ := time.ParseDuration(os.Getenv("REDMUX_SLOWDRAIN"))
	if d <= 0 {
		t.Skip("set REDMUX_SLOWDRAIN=60s to run")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	slots, qbytes, fastOK, calls, pressure, heap := slowDrain(t, nil, 16, 0, d)
	t.Logf("%v, default caps: %d calls, %d with both fast nodes OK, %d back-pressured; slow connection at most %d slots, %d bytes queued; heap in use %.1f MB at start, at most %.1f MB",
		d, calls, fastOK, pressure, slots, qbytes, float64(ms.HeapInuse)/1e6, float64(heap)/1e6)
	if slots > DefaultMaxPending || qbytes > DefaultMaxQueuedBytes+64 {
		t.Fatalf("caps passed: %d slots, %d bytes", slots, qbytes)
	}
}

// pushChunk is 64 KiB of whole RESP3 push frames.
var pushChunk = func() []byte {
	var b []byte
	for len(b) < 64<<10 {
		b = resp.AppendPushHeader(b, 2)
		b = resp.AppendBulkString(b, "message")
		b = resp.AppendBulkString(b, "flood flood flood flood")
	}
	return b
}()

// startFlood starts a node that, once its set-up is answered, streams push
// frames as fast as the client reads them, and answers commands between
// them if answer is set (else nothing: a quorum of 2 of 3 then needs both
// other nodes); flooded counts the bytes it wrote.
func startFlood(t *testing.T, flooded *atomic.Int64, answer bool) *hostile {
	return startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if c.n > 0 && !answer {
				return nil
			}
			return r
		}
		h.after = func(c *hconn) {
			for {
				select {
				case <-h.done:
					return
				default:
				}
				if c.send(pushChunk) != nil {
					return
				}
				flooded.Add(int64(len(pushChunk)))
			}
		}
	})
}

// floodRun runs workers on [flood, healthy, healthy] with quorum q until
// each made rounds calls or, with soak > 0, for soak. It returns the
// replies each healthy node delivered and the calls.
func floodRun(t *testing.T, c *Client, q, workers, rounds int, soak time.Duration) (healthy [2]int64, calls int64) {
	var got [2]atomic.Int64
	var n atomic.Int64
	end := time.Now().Add(soak)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			b.Broadcast(resp.AppendCommand(nil, "SET", "k"+strconv.Itoa(w), "v"))
			for r := 0; soak > 0 && time.Now().Before(end) || soak == 0 && r < rounds; r++ {
				_, _ = c.Do(context.Background(), b, Policy{Quorum: q, Success: isOK})
				n.Add(1)
				for i := 1; i <= 2; i++ {
					if rep, err := b.Last(i); err == nil && rep.IsOK() {
						got[i-1].Add(1)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	return [2]int64{got[0].Load(), got[1].Load()}, n.Load()
}

// One node streaming push frames without end never starves the others:
// the reader reads it a budget at a time, round-robin with the healthy
// nodes, so they answer every call (a reader pinned on the flood let them
// deliver 352 replies in 3 s, and Close took 19 s), and Close returns,
// leaving no goroutine behind. Counted: the flood node answers too and
// every call waits for all three nodes (Quorum 0). With REDMUX_FLOOD=5s it
// measures the healthy nodes' throughput instead: the flood node answers
// nothing and calls need both healthy nodes (Quorum 2), and requires the
// issue's figures: each healthy node >= 2,000 replies per second of soak,
// Close < 2 s (not in make test: a figure for a quiet machine).
func TestPushFloodDoesNotStarveOthers(t *testing.T) {
	before := runtime.NumGoroutine()
	var flooded atomic.Int64
	soak, _ := time.ParseDuration(os.Getenv("REDMUX_FLOOD"))
	hs := []*hostile{startFlood(t, &flooded, soak <= 0), startHostile(t, nil), startHostile(t, nil)}
	addrs := []string{hs[0].addr(), hs[1].addr(), hs[2].addr()}
	cfg := Config{Addrs: addrs, Conns: 1, Timeout: 2 * time.Second, ReconnectMin: 10 * time.Millisecond}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var healthy [2]int64
	var calls int64
	if soak > 0 {
		healthy, calls = floodRun(t, c, 2, 16, 0, soak)
	} else {
		healthy, calls = floodRun(t, c, 0, 8, 60, 0)
	}
	start := time.Now()
	_ = c.Close()
	closeTook := time.Since(start)
	t.Logf("%d calls: healthy nodes delivered %d and %d replies; the flood node sent %.1f MB of pushes; Close took %v",
		calls, healthy[0], healthy[1], float64(flooded.Load())/1e6, closeTook)
	if flooded.Load() < 4*int64(len(pushChunk)) {
		t.Fatalf("the flood node sent only %d bytes: the test did not flood", flooded.Load())
	}
	// Every call waits up to 2s: a healthy node misses one only when the
	// machine stalls the test; allow 1 in 100.
	for i, h := range healthy {
		if h < calls*99/100 {
			t.Fatalf("healthy node %d delivered %d replies in %d calls", i+1, h, calls)
		}
		// The soak's figure (issue 23: >= 10,000 in 5 s): starved, the
		// calls themselves are few (each waits out its 2 s), so the ratio
		// above alone would pass.
		if want := int64(soak.Seconds() * 2000); soak > 0 && h < want {
			t.Fatalf("healthy node %d delivered %d replies in %v, want >= %d", i+1, h, soak, want)
		}
	}
	if soak > 0 && closeTook >= 2*time.Second {
		t.Fatalf("Close took %v under the flood, want < 2s", closeTook)
	}
	for _, h := range hs {
		h.close()
	}
	if g := settle(runtime.NumGoroutine, before, 5*time.Second); g > before {
		t.Fatalf("%d goroutines after Close and the servers' end, %d before", g, before)
	}
}

// A push frame right after the set-up replies (in the same read, the last
// one split across reads) is skipped: the connection stays, and replies
// after it are matched to their commands.
func TestPushAfterSetupSkipped(t *testing.T) {
	push := resp.AppendBulkString(resp.AppendBulkString(resp.AppendPushHeader(nil, 2), "invalidate"), "k")
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			switch {
			case string(args[0]) == "CLIENT":
				return append(append(r, push...), push[:5]...)
			case c.mode == 0: // the first command after the set-up: the push's rest first
				c.mode = -1
				return append(append(push[5:len(push):len(push)], push...), r...)
			}
			return r
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Scripts = nil; cfg.Conns = 1 })
	b := c.NewBatch()
	for k := 0; k < 20; k++ {
		want := "v" + strconv.Itoa(k)
		b.Reset()
		b.Add(0, resp.AppendCommand(nil, "ECHO", want))
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		if rep, err := b.Last(0); err != nil || string(rep.Data) != want {
			t.Fatalf("call %d: %q %v", k, rep.Data, err)
		}
	}
	h.mu.Lock()
	accepted := len(h.conns)
	h.mu.Unlock()
	if accepted != 1 || !c.NodeUp(0) {
		t.Fatalf("%d connections accepted (node up: %v): the push after the set-up must not break it", accepted, c.NodeUp(0))
	}
}

// setupHang serves one connection normally (it answers the set-up, then
// drops the connection) and holds every later one without a byte of
// answer: a redial that hangs mid-set-up (mid-handshake for TLS until wrap
// handshakes). It returns the address and the count of accepted
// connections.
func setupHang(t *testing.T, wrap func(net.Conn) net.Conn) (string, *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	stop, exited := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); _ = ln.Close(); <-exited })
	go func() {
		defer close(exited)
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c := wrap(nc)
			held = append(held, c)
			if accepted.Add(1) == 1 {
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err == nil {
					_, _ = c.Write([]byte("+OK\r\n"))
				}
				go func() { time.Sleep(20 * time.Millisecond); _ = c.Close() }()
				continue
			}
			if tc, ok := c.(*tls.Conn); ok {
				go func() { _ = tc.Handshake() }() // then no answer to the set-up
			}
		}
	}()
	return ln.Addr().String(), &accepted
}

// Close returns while a redial hangs in its set-up (DialTimeout is an
// hour here), on every transport, TLS included, and leaves no goroutine.
func TestCloseDuringSetupRedial(t *testing.T) {
	files, err := redisproc.WriteCerts(t.TempDir(), redisproc.CertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, tc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"plain", func(c net.Conn) net.Conn { return c }},
		{"tls", func(c net.Conn) net.Conn { return tls.Server(c, srv) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			addr, accepted := setupHang(t, tc.wrap)
			cfg := Config{Addrs: []string{addr}, DialTimeout: time.Hour, ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond}
			if tc.name == "tls" {
				cfg.TLS = tlsConfig(t, files)
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 500 && accepted.Load() < 2; k++ {
				time.Sleep(10 * time.Millisecond)
			}
			if accepted.Load() < 2 {
				t.Fatal("no redial reached the server")
			}
			time.Sleep(20 * time.Millisecond) // let the redial enter its set-up
			closed := make(chan struct{})
			go func() { _ = c.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(30 * time.Second): // a guard, not a speed target: DialTimeout is an hour
				t.Fatal("Close waits for the redial's set-up")
			}
			if g := settle(runtime.NumGoroutine, before+4, 5*time.Second); g > before+4 {
				t.Fatalf("%d goroutines after Close, %d before", g, before)
			}
		})
	}
}

// strayRun runs workers on a node that answers SET with +OK and INCRBY k n
// with :n, and now and then sends a stray bulk string before a reply
// (while other replies are outstanding). Each batch alternates SET and
// INCRBY with unique n, added with expect (or ExpectAny). It returns the
// replies delivered to the wrong command, those matched, and the strays
// sent.
func strayRun(t *testing.T, expect bool) (wrong, matched, strays int64) {
	var sent atomic.Int64
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if c.n == 0 {
				return r // the set-up
			}
			if string(args[0]) == "INCRBY" && len(args) == 3 {
				r = append(append([]byte(":"), args[2]...), '\r', '\n')
			}
			if c.rng.IntN(100) == 0 {
				sent.Add(1)
				r = append([]byte("$5\r\nstray\r\n"), r...)
			}
			return r
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Scripts = nil; cfg.Conns = 1; cfg.Timeout = time.Second })
	var bad, good atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			for r := 0; r < 100; r++ {
				for k := 0; k < 200 && !c.NodeUp(0); k++ {
					time.Sleep(5 * time.Millisecond) // the broken connection is being replaced
				}
				b.Reset()
				for k := 0; k < 4; k++ {
					n := strconv.Itoa(w*1000000 + r*10 + k)
					set, incr := ExpectAny, ExpectAny
					if expect {
						set, incr = ExpectSimple|ExpectNil, ExpectInt
					}
					b.AddExpect(0, resp.AppendCommand(nil, "SET", "k", n), set)
					b.AddExpect(0, resp.AppendCommand(nil, "INCRBY", "k", n), incr)
				}
				if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
					t.Error(err)
					return
				}
				for k := 0; k < 8; k++ {
					rep, err := b.Reply(0, k)
					if err != nil {
						continue // the connection broke: not delivered
					}
					want := "OK"
					if k%2 == 1 {
						want = strconv.Itoa(w*1000000 + r*10 + k/2)
					}
					if string(rep.Data) == want {
						good.Add(1)
					} else {
						bad.Add(1)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	return bad.Load(), good.Load(), sent.Load()
}

// A stray reply while others are outstanding shifts a connection's FIFO:
// every later reply would go to the wrong command. With the kinds each
// command expects, the first reply out of step breaks the connection
// instead: no reply reaches a command it does not belong to.
func TestStrayReplyBreaksConnection(t *testing.T) {
	wrong, matched, strays := strayRun(t, true)
	t.Logf("with expected kinds: %d strays, %d replies matched, %d delivered to the wrong command", strays, matched, wrong)
	if strays == 0 || matched < 1000 {
		t.Fatalf("%d strays, %d matched: the test did not exercise the client", strays, matched)
	}
	if wrong != 0 {
		t.Fatalf("%d replies delivered to the wrong command", wrong)
	}
	wrong, matched, strays = strayRun(t, false)
	t.Logf("without (ExpectAny): %d strays, %d replies matched, %d delivered to the wrong command", strays, matched, wrong)
}

// The NOSCRIPT fallback keeps its command's expected kinds: the EVAL's
// integer reaches the command, the SCRIPT LOAD's bulk SHA is accepted,
// and the connection stays.
func TestNoScriptFallbackKeepsExpect(t *testing.T) {
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			switch string(args[0]) {
			case "EVALSHA":
				return []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n")
			case "EVAL":
				return []byte(":1\r\n")
			}
			return r
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Conns = 1 })
	sha := c.cfg.Scripts[0].SHA
	b := c.NewBatch()
	for k := 0; k < 5; k++ {
		b.Reset()
		b.AddExpect(0, resp.AppendCommand(nil, "EVALSHA", sha, "1", "k", "v"), ExpectInt)
		if _, err := c.Do(context.Background(), b, Policy{Success: isOne}); err != nil {
			t.Fatal(err)
		}
		if rep, err := b.Last(0); err != nil || rep.N != 1 {
			t.Fatalf("call %d: %v %v", k, rep, err)
		}
	}
	h.mu.Lock()
	accepted := len(h.conns)
	h.mu.Unlock()
	if accepted != 1 {
		t.Fatalf("%d connections: the fallback's replies broke the connection", accepted)
	}
}
