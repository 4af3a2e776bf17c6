package mux

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

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
