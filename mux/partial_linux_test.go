//go:build linux && !redmux_portable

package mux

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// TestPartialWrites: one fake node is blackholed (it soon stops reading)
// while a 16 MB batch is written to it: writes return EAGAIN and finish
// through EPOLLOUT once it heals; every reply of every node is
// matched, and the connection is healthy afterwards.
func TestPartialWrites(t *testing.T) {
	cl := startFake(t, 5, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	before := shortWrites.Load()
	cl.Nodes[0].Blackhole()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(300 * time.Millisecond)
		cl.Nodes[0].Heal()
	}()
	const cmds = 8000
	val := strings.Repeat("y", 2048)
	key := uniqueKey("partial")
	b := c.NewBatch()
	for k := 0; k < cmds; k++ {
		b.Add(0, resp.AppendCommand(nil, "SET", key, val))
	}
	b.Add(0, resp.AppendCommand(nil, "GET", key))
	for i := 1; i < c.N(); i++ {
		b.Add(i, resp.AppendCommand(nil, "PING"))
	}
	out, err := c.Do(context.Background(), b, Policy{Timeout: 20 * time.Second})
	<-resumed
	if err != nil || out.Successes != c.N() {
		t.Fatalf("%+v %v (node 0: %v)", out, err, b.Err(0))
	}
	if shortWrites.Load() == before {
		t.Fatal("no write hit EAGAIN: the batch did not exercise partial writes")
	}
	for k := 0; k < cmds; k++ {
		if r, err := b.Reply(0, k); err != nil || !r.IsOK() {
			t.Fatalf("reply %d: %v %v", k, r, err)
		}
	}
	if r, err := b.Last(0); err != nil || string(r.Data) != val {
		t.Fatalf("GET: %d bytes, %v", len(r.Data), err)
	}
	testAllReplies(t, c)
}
