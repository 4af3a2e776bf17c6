package mux

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

// TestEveryNodeErrorIsNodeError: whatever a node's result (down, no reply
// by the deadline, not awaited once the outcome was decided, not sent,
// client closed), Reply, Last and Err give a *NodeError that names the
// node and its address and matches its kind with errors.Is; the kinds
// without a cause are made once per client, so they cost no allocation.
func TestEveryNodeErrorIsNodeError(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), nil)
	addrs := c.Addrs()
	check := func(t *testing.T, b *Batch, node int, kinds ...error) {
		t.Helper()
		_, rerr := b.Last(node)
		for _, err := range []error{rerr, b.Err(node)} {
			var ne *NodeError
			if !errors.As(err, &ne) {
				t.Fatalf("node %d: %T %v, want a *NodeError", node, err, err)
			}
			kindOK := false
			for _, k := range kinds {
				kindOK = kindOK || errors.Is(err, k)
			}
			if ne.Node != node || ne.Addr != addrs[node] || !kindOK {
				t.Fatalf("node %d: %+v, want node %d at %s of a kind in %v", node, ne, node, addrs[node], kinds)
			}
			if !strings.Contains(err.Error(), addrs[node]) {
				t.Fatalf("node %d: %q does not name the node's address", node, err)
			}
		}
	}
	run := func(p Policy, ctx context.Context) *Batch {
		b := c.NewBatch()
		b.Broadcast(resp.AppendCommand(nil, "PING"))
		_, _ = c.Do(ctx, b, p)
		return b
	}
	ctx := context.Background()
	run(Policy{Timeout: time.Second}, ctx) // every node connected

	tests := []struct {
		name  string
		setup func() (undo func())
		pol   Policy
		ctx   func() (context.Context, context.CancelFunc)
		node  int
		kinds []error
	}{
		{"pending", func() func() {
			cl.Nodes[2].SetLatency(300*time.Millisecond, 0)
			return func() { cl.Nodes[2].SetLatency(0, 0) }
		}, Policy{Quorum: 2, Timeout: time.Second}, nil, 2, []error{ErrPending}},
		{"timeout", func() func() {
			cl.Nodes[1].SetLatency(300*time.Millisecond, 0)
			return func() { cl.Nodes[1].SetLatency(0, 0) }
		}, Policy{Timeout: 30 * time.Millisecond}, nil, 1, []error{ErrTimeout}},
		{"not sent", func() func() { return func() {} }, Policy{Timeout: time.Second},
			func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(ctx, time.Now().Add(-time.Second))
			}, 0, []error{ErrNotSent}},
		// A node that goes away: down, or (the net.Conn transport may see
		// the close first) its connection broken.
		{"down", func() func() {
			cl.Nodes[0].Down()
			return func() { cl.Nodes[0].Up() }
		}, Policy{Timeout: 200 * time.Millisecond}, nil, 0, []error{ErrNodeDown, ErrConnBroken}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			undo := tt.setup()
			defer undo()
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if tt.ctx != nil {
				cctx, cancel = tt.ctx()
			}
			defer cancel()
			b := run(tt.pol, cctx)
			check(t, b, tt.node, tt.kinds...)
		})
	}
	// Close with a call in flight: the nodes it waited on say ErrClosed.
	cl.Nodes[1].SetLatency(2*time.Second, 0)
	b := c.NewBatch()
	b.Broadcast(resp.AppendCommand(nil, "PING"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Do(ctx, b, Policy{Timeout: 5 * time.Second})
	}()
	time.Sleep(50 * time.Millisecond)
	_ = c.Close()
	<-done
	cl.Nodes[1].SetLatency(0, 0)
	check(t, b, 1, ErrClosed)
}
