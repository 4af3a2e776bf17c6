package mux

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// TestCapCountsSharedCommands: shared commands (Batch.AddShared) wait in
// the connection's pending groups, outside the write queue and the reply
// slots, until the next write. The caps count them: while the writer
// waits for a full socket, batches of shared commands only must not pile
// up past MaxQueuedBytes (before, 200 batches of 64 KiB left 13.1 MB
// pending under a 1 MiB cap; found by a review session).
func TestCapCountsSharedCommands(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := startHostile(t, func(hh *hostile) {
		hh.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) == "ECHO" && string(args[1]) == "stop" {
				_ = c.send(r)
				select { // stop reading
				case <-release:
				case <-hh.done:
				}
				return nil
			}
			return r
		}
	})
	const capB = 1 << 20
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Scripts, cfg.Conns, cfg.MaxQueuedBytes, cfg.Timeout = nil, 1, capB, 3*time.Second
	})
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "stop"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	cn := c.conns[0]
	// Fill the socket until the writer waits for room.
	fill := strings.Repeat("f", 256<<10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i := 0; ; i++ {
		if _, _, stuck := queued(cn); stuck {
			break
		}
		if i > 400 {
			t.Fatal("socket never filled")
		}
		fb := c.NewBatch()
		fb.Add(0, resp.AppendCommand(nil, "SET", "f", fill))
		go func() { _, _ = c.Do(ctx, fb, Policy{}) }()
		time.Sleep(2 * time.Millisecond)
	}
	wq, _, _ := queued(cn)
	val := strings.Repeat("s", 64<<10)
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sb := c.NewBatch()
			sb.AddShared(0, resp.AppendCommand(nil, "GET", strconv.Itoa(i)+val), ExpectAny)
			_, _ = c.Do(ctx, sb, Policy{})
		}(i)
	}
	time.Sleep(300 * time.Millisecond)
	cn.mu.Lock()
	pend := 0
	for _, g := range cn.pend {
		pend += len(g.cmd)
	}
	q := len(cn.wq) + cn.inflight
	cn.mu.Unlock()
	cancel()
	wg.Wait()
	t.Logf("wq+inflight %d (stuck at %d), pend %d bytes in shared groups, MaxQueuedBytes %d", q, wq, pend, capB)
	if q+pend > 2*capB {
		t.Fatalf("%d bytes queued on a connection with MaxQueuedBytes %d", q+pend, capB)
	}
}
