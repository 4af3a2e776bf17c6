package mux

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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

// A batch whose commands per node change from call to call (one batch
// reused with other layouts, as redlock's workers do) reads each node's
// replies of the call just made, in command order; after Reset and new
// commands, before Do, it shows none of the last call's.
func TestBatchLayoutChanges(t *testing.T) {
	addrs := []string{startHostile(t, nil).addr(), startHostile(t, nil).addr(), startHostile(t, nil).addr()}
	c := newTestClient(t, addrs, func(cfg *Config) { cfg.Scripts = nil })
	b := c.NewBatch()
	layouts := [][]int{{2, 1, 0}, {1, 3, 2}, {0, 0, 4}, {3, 0, 1}, {1, 1, 1}}
	for round, counts := range layouts {
		b.Reset()
		for node, k := range counts {
			for j := 0; j < k; j++ {
				b.Add(node, resp.AppendCommand(nil, "ECHO", fmt.Sprintf("r%d-n%d-c%d", round, node, j)))
			}
		}
		for node := range counts { // nothing before Do, whatever the last call had
			if err := b.Err(node); counts[node] > 0 && !errors.Is(err, ErrNotSent) {
				t.Fatalf("round %d node %d before Do: %v, want ErrNotSent", round, node, err)
			}
		}
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for node, k := range counts {
			for j := 0; j < k; j++ {
				rep, err := b.Reply(node, j)
				if want := fmt.Sprintf("r%d-n%d-c%d", round, node, j); err != nil || string(rep.Data) != want {
					t.Fatalf("round %d node %d command %d: %q %v, want %q", round, node, j, rep.Data, err, want)
				}
			}
			if _, err := b.Reply(node, k); !errors.Is(err, ErrBadBatch) {
				t.Fatalf("round %d node %d: reply %d of %d: %v, want ErrBadBatch", round, node, k, k, err)
			}
		}
	}
	// more commands added after Do: the call's replies stay, the new
	// commands have none
	b.Add(0, resp.AppendCommand(nil, "ECHO", "late"))
	if _, err := b.Reply(0, 1); !errors.Is(err, ErrNotSent) {
		t.Fatalf("the late command's reply: %v, want ErrNotSent", err)
	}
	if rep, err := b.Reply(0, 0); err != nil || string(rep.Data) != "r4-n0-c0" {
		t.Fatalf("the call's reply after a late Add: %q %v", rep.Data, err)
	}
}
