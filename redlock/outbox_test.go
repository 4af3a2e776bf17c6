package redlock

import (
	"sync/atomic"
	"testing"
	"time"
)

// gate is an observer that blocks in its first event until released and
// counts every event.
type gate struct {
	in, release chan struct{}
	n           atomic.Int64
}

func (g *gate) Observe(e Event) {
	if g.n.Add(1) == 1 {
		close(g.in)
		<-g.release
	}
}

// TestOutboxBounded: while the observer is blocked, at most outboxCap
// events wait and the rest are dropped and counted; once it returns, the
// waiting ones are delivered in full and close returns after them.
func TestOutboxBounded(t *testing.T) {
	g := &gate{in: make(chan struct{}), release: make(chan struct{})}
	c := &Client{obs: g}
	o := &c.ka.out
	o.start(c)
	o.put(Event{Op: OpKeepAlive})
	select {
	case <-g.in:
	case <-time.After(10 * time.Second):
		t.Fatal("the first event was not delivered")
	}
	for i := 0; i < outboxCap+904; i++ {
		o.put(Event{Op: OpKeepAlive, LockID: uint64(i)})
	}
	if d := c.ObserverDropped(); d != 904 {
		t.Fatalf("dropped %d, want 904", d)
	}
	close(g.release)
	o.close()
	if n := g.n.Load(); n != 1+outboxCap {
		t.Fatalf("delivered %d, want %d", n, 1+outboxCap)
	}
	o.put(Event{Op: OpKeepAlive}) // after close: ignored, no panic
}
