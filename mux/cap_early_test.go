package mux

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// TestCapHoldsWhenRepliesComeEarly: a node that answers a command before
// it has read it (here it stops reading and sends one +OK per command
// the client queued) empties the reply slots while the commands' bytes
// still sit unwritten in the queue. MaxQueuedBytes must still hold: the
// unwritten bytes count whether or not a reply is outstanding (only a
// returning write's bytes, all answered, do not). A cap that skipped
// every byte while no reply was outstanding let 46 MB queue past a
// 64 KiB cap here.
func TestCapHoldsWhenRepliesComeEarly(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	got := make(chan *hconn, 1)
	h := startHostile(t, func(hh *hostile) {
		hh.reply = func(c *hconn, args [][]byte, r []byte) []byte {
			if string(args[0]) == "ECHO" && string(args[1]) == "stop" {
				_ = c.send(r)
				got <- c
				select { // stop reading
				case <-release:
				case <-hh.done:
				}
				return nil
			}
			return r
		}
	})
	const capB = 64 << 10
	c := newTestClient(t, []string{h.addr()}, func(cfg *Config) {
		cfg.Scripts, cfg.Conns, cfg.MaxQueuedBytes, cfg.Timeout = nil, 1, capB, 2*time.Second
	})
	b := c.NewBatch()
	b.Add(0, resp.AppendCommand(nil, "ECHO", "stop"))
	if _, err := c.Do(context.Background(), b, Policy{}); err != nil {
		t.Fatal(err)
	}
	hc := <-got
	cn := c.conns[0]
	val := strings.Repeat("v", 1<<20)
	maxQ := 0
	for i := 0; i < 48; i++ {
		bb := c.NewBatch()
		bb.Add(0, resp.AppendCommand(nil, "SET", "k", val))
		done := make(chan error, 1)
		go func() { _, err := c.Do(context.Background(), bb, Policy{}); done <- err }()
		// answer it early, once its slot is queued
		for end := time.Now().Add(3 * time.Second); ; {
			if _, n, _ := queued(cn); n > 0 {
				break
			}
			select {
			case err := <-done:
				q, _, _ := queued(cn)
				t.Logf("round %d: refused: %v (queued %d bytes, max seen %d)", i, err, q, maxQ)
				if maxQ > 4*(capB+len(val)) {
					t.Fatalf("queued %d bytes with MaxQueuedBytes %d", maxQ, capB)
				}
				return
			default:
			}
			if time.Now().After(end) {
				t.Fatalf("round %d: slot never queued", i)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if err := hc.send([]byte("+OK\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Logf("round %d: %v", i, err)
		}
		if q, _, _ := queued(cn); q > maxQ {
			maxQ = q
		}
	}
	t.Fatalf("48 MiB queued past a 64 KiB cap: max %d bytes unwritten in wq (MaxQueuedBytes %d)", maxQ, capB)
}
