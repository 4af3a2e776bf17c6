package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// A reply can never reach a batch it does not belong to: thousands of
// concurrent batches, each echoing values unique to it, on nodes that
// split replies into 1-byte writes, delay, stall and drop connections; some
// batches return at quorum and abandon their slots. Every reply a batch
// sees is its own.
func TestHostileRepliesNeverCross(t *testing.T) {
	const nodes = 5
	addrs := make([]string, nodes)
	for i := range addrs {
		mode := i // 0 normal, 1 split, 2 delay, 3 stall, 4 drop
		h := startHostile(t, func(h *hostile) {
			h.reply = func(c *hconn, _ [][]byte, r []byte) []byte { c.mode = mode; return r }
		})
		addrs[i] = h.addr()
	}
	c := newTestClient(t, addrs, func(cfg *Config) {
		cfg.Scripts = nil
		cfg.Timeout = 40 * time.Millisecond
		cfg.HardTimeout = 150 * time.Millisecond
		cfg.Conns = 2
	})
	const workers, rounds = 64, 60
	var wg sync.WaitGroup
	var crossed, matched, errored atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			b := c.NewBatch()
			for r := 0; r < rounds; r++ {
				b.Reset()
				b.SetKey(strconv.Itoa(w*rounds + r))
				for i := 0; i < nodes; i++ {
					for k := 0; k < 1+r%3; k++ {
						b.Add(i, resp.AppendCommand(nil, "ECHO", fmt.Sprintf("w%d-r%d-n%d-k%d", w, r, i, k)))
					}
				}
				p := Policy{}
				if r%2 == 1 {
					p.Quorum = 1 + r%nodes // returns early, abandoning slots
				}
				if _, err := c.Do(context.Background(), b, p); err != nil {
					crossed.Add(1000000) // Do itself must not fail here
					return
				}
				for i := 0; i < nodes; i++ {
					for k := 0; k < b.Commands(i); k++ {
						rep, err := b.Reply(i, k)
						switch {
						case err != nil:
							errored.Add(1)
						case string(rep.Data) == fmt.Sprintf("w%d-r%d-n%d-k%d", w, r, i, k):
							matched.Add(1)
						default:
							crossed.Add(1)
						}
					}
				}
			}
		}(w)
	}
	wg.Wait()
	t.Logf("replies: %d matched, %d errors (timeouts, drops, abandoned)", matched.Load(), errored.Load())
	if crossed.Load() != 0 {
		t.Fatalf("%d replies reached a batch they did not belong to", crossed.Load())
	}
	if matched.Load() < workers*rounds {
		t.Fatalf("only %d replies matched: the test did not exercise the client", matched.Load())
	}
}

// D3: bytes a server sends while nothing is outstanding are a protocol
// error (the connection is replaced), never matched to the next command.
// Broken (the stray matched to the next command), the first ECHO below
// gets "STRAY!".
//
// The client is left idle until the stray has been sent and the client
// has replaced the connection on its own (the poller reads idle
// connections at each sweep): a call made while the stray is still on its
// way is exactly the case no RESP client can tell apart (the stray comes
// first in the stream, before the call's reply), and a loaded -race run
// once delayed the server's stray past a fixed sleep.
func TestUnsolicitedReplyIsProtocolError(t *testing.T) {
	var once atomic.Bool
	sent := make(chan struct{})
	h := startHostile(t, func(h *hostile) {
		h.after = func(c *hconn) {
			if once.Swap(true) {
				return // the first connection only
			}
			time.Sleep(30 * time.Millisecond)
			_ = c.send([]byte("$6\r\nSTRAY!\r\n"))
			close(sent)
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Scripts = nil; cfg.Conns = 1 })
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never sent its stray")
	}
	accepted := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.conns)
	}
	for end := time.Now().Add(5 * time.Second); accepted() < 2 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := accepted(); n != 2 {
		t.Fatalf("%d connections: the stray, sent while idle, must have replaced the first one", n)
	}
	waitAllOK(t, c, 3*time.Second)
	if n := accepted(); n != 2 {
		t.Fatalf("%d connections after the calls: only the stray's connection should have been replaced", n)
	}
	b := c.NewBatch()
	for k := 0; k < 5; k++ {
		want := "v" + strconv.Itoa(k)
		b.Reset()
		b.Add(0, resp.AppendCommand(nil, "ECHO", want))
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		if rep, err := b.Last(0); err != nil || string(rep.Data) != want {
			t.Fatalf("batch %d: %q %v", k, rep.Data, err)
		}
	}
}

// D3b: the same after calls, not only before the first: a stray sent
// while the client is idle between calls is a protocol error too, never
// the next call's reply. On io_uring this needs the receives re-armed by
// the previous call to reach the kernel when that call ends (the flush at
// the token's release), not with the next call's commands: then the
// stray and the reply come in one arrival, and the stray, an OK like a
// SET's, passed for the reply.
//
// The poller is left asleep (noSweeps), so only the callers read, and the next
// call starts once the stray has reached the client (arrivedWhileIdle: at once
// on epoll, the receive's completion posted on io_uring; on the net.Conn
// transport, whose reader goroutines read by themselves, once they replaced the
// connection). Not a fixed sleep: a loaded -race run can take longer than any.
// With the receive not re-armed at the release, the completion is never posted
// and the test fails.
func TestUnsolicitedAfterCallIsProtocolError(t *testing.T) {
	noSweeps(t)
	stray := make(chan *hconn, 1)
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) == "ECHO" && string(args[1]) == "trigger" {
				select {
				case stray <- c:
				default:
				}
			}
			return r
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) { cfg.Scripts = nil; cfg.Conns = 1 })
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "trigger"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.Last(0); err != nil || string(rep.Data) != "trigger" {
		t.Fatalf("trigger: %q %v", rep.Data, err)
	}
	// The call is over; the server now sends a stray OK.
	hc := <-stray
	if err := hc.send([]byte("+OK\r\n")); err != nil {
		t.Fatal(err)
	}
	accepted := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.conns)
	}
	for end := time.Now().Add(5 * time.Second); !arrivedWhileIdle(c) && accepted() < 2; {
		if time.Now().After(end) {
			t.Fatal("the stray never reached the idle client: was the receive armed when the last call ended?")
		}
		time.Sleep(time.Millisecond)
	}
	// Bounded by count: the first call finds the stray and replaces the
	// connection; later calls go to the new one.
	var last string
	for k := 0; k < 200; k++ {
		b.Reset()
		b.Add(0, resp.AppendCommand(nil, "ECHO", "x"+strconv.Itoa(k)))
		_, _ = c.Do(context.Background(), b, Policy{})
		rep, err := b.Last(0)
		if err == nil && string(rep.Data) != "x"+strconv.Itoa(k) {
			t.Fatalf("call %d got %q: the stray passed for a reply", k, rep.Data)
		}
		if err == nil {
			last = string(rep.Data)
		}
		if accepted() == 2 && err == nil {
			return // replaced, and the new connection answers
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the stray never broke the connection (last reply %q)", last)
}

// D4: a node streaming a huge reply breaks its connection at
// MaxReplyBytes (ErrProtocol), within Do's deadline, and the grown read
// buffer is released.
func TestHugeReplyBounded(t *testing.T) {
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) != "ECHO" {
				return r
			}
			go func() {
				_ = c.send([]byte("$536870912\r\n"))
				chunk := bytes.Repeat([]byte("x"), 64<<10)
				for i := 0; i < 8192 && c.send(chunk) == nil; i++ {
				}
			}()
			return nil
		}
	})
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Scripts = nil
		cfg.MaxReplyBytes = 256 << 10
		cfg.Timeout = 3 * time.Second
	})
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "x"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	err := b.Err(0)
	if !errors.Is(err, ErrProtocol) || !errors.Is(err, errReplyTooBig) {
		t.Fatalf("want a protocol error for the oversized reply, got %v", err)
	}
	_ = c.Close() // the read side has stopped: its state can be read
	for _, cn := range c.conns {
		if len(cn.rd.buf) > initialReadBuf {
			t.Fatalf("read buffer of %d bytes kept after the connection was replaced", len(cn.rd.buf))
		}
	}
}

// D5: a node answering NOSCRIPT to everything gets one EVAL fallback per
// command per batch, then the batch has the node's error.
func TestNoScriptFallbackOnce(t *testing.T) {
	h := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) == "EVALSHA" || string(args[0]) == "EVAL" {
				return []byte("-NOSCRIPT No matching script. Please use EVAL.\r\n")
			}
			return r
		}
	})
	c := newTestClient(t, []string{h.addr()}, nil)
	sha := c.cfg.Scripts[0].SHA
	b := c.NewBatch()
	const batches, perBatch = 5, 3
	for k := 0; k < batches; k++ {
		b.Reset()
		for j := 0; j < perBatch; j++ {
			b.Add(0, resp.AppendCommand(nil, "EVALSHA", sha, "1", "k", "v"))
		}
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < perBatch; j++ {
			if _, err := b.Reply(0, j); !errors.Is(err, ErrServer) {
				t.Fatalf("batch %d command %d: %v", k, j, err)
			}
		}
	}
	if got := h.evals.Load(); got != batches*perBatch {
		t.Fatalf("%d EVAL resends for %d EVALSHA commands: want exactly one each", got, batches*perBatch)
	}
}

// D6: Do's deadline covers waiting for room in a full write queue; a batch
// whose deadline passed while it waited is never queued.
func TestDeadlineCoversQueueWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A node that answers the set-up, then never reads again, until the
	// test ends (its socket must not outlive the test: a later test counts
	// file descriptors).
	stop, exited := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); _ = ln.Close(); <-exited })
	go func() {
		defer close(exited)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 4096)
		_, _ = nc.Read(buf)
		_, _ = nc.Write([]byte("+OK\r\n"))
		<-stop
	}()
	c := newTestClient(t, []string{ln.Addr().String()}, func(cfg *Config) {
		cfg.Scripts = nil
		cfg.MaxQueuedBytes = 64 << 10
		cfg.Timeout = 20 * time.Millisecond
		cfg.HardTimeout = 10 * time.Second
	})
	b := c.NewBatch()
	big := bytes.Repeat([]byte("y"), 32<<10)
	sawQueueFull := false
	queued := 0
	for k := 0; k < 200 && !sawQueueFull; k++ {
		b.Reset()
		b.Add(0, resp.AppendCommand(nil, "SET", "k", string(big)))
		start := time.Now()
		if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
			t.Fatal(err)
		}
		// Functional bound (the deadline is 20ms, HardTimeout 10s):
		// waiting for queue room must stop at the deadline, not when the
		// node drains (never, here).
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("batch %d: Do took %v with a 20ms deadline", k, d)
		}
		if errors.Is(b.Err(0), errQueueFull) {
			sawQueueFull = true
		}
		// Bytes a writer is handing to the socket count too (issue 23:
		// the portable transport's 2ms blocking writes let callers queue
		// another MaxQueuedBytes behind each one, without bound).
		c.conns[0].mu.Lock()
		queued = max(queued, len(c.conns[0].wq)+c.conns[0].inflight)
		c.conns[0].mu.Unlock()
	}
	if !sawQueueFull {
		t.Fatal("the queue never filled: the test did not reach back-pressure")
	}
	if queued > c.cfg.MaxQueuedBytes+len(big)+64 {
		t.Fatalf("%d bytes queued, cap %d", queued, c.cfg.MaxQueuedBytes)
	}
}

// D7: a batch run again without Reset never shows the previous run's
// replies: Do resets the results itself.
func TestRerunWithoutResetClearsResults(t *testing.T) {
	slow := startHostile(t, func(h *hostile) {
		h.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) == "ECHO" && c.n > 0 {
				time.Sleep(200 * time.Millisecond)
			}
			return r
		}
	})
	fast := startHostile(t, nil)
	c := newTestClient(t, []string{fast.addr(), slow.addr()}, func(cfg *Config) { cfg.Scripts = nil; cfg.Timeout = time.Second })
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "ECHO", "first"))
	if out, err := c.Do(context.Background(), b, Policy{}); err != nil || out.Successes != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	// Again, unchanged, returning as soon as the fast node answered.
	if _, err := c.Do(context.Background(), b, Policy{Quorum: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Last(1); !errors.Is(err, ErrPending) {
		t.Fatalf("slow node after the early return: %v (a stale reply from the first run?)", err)
	}
}
