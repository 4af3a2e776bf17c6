//go:build linux && !redmux_portable

package mux

import (
	"errors"
	"testing"
	"time"
)

// TestStrayWaitEndsAtDeadline: enter's wait for a read turn ends at the
// call's deadline. A holder that never reads (here the test, holding the
// token for good; in the mutation suite's CI run once, a caller spun in
// enter for ten minutes) must not hold Do past it: the call returns with
// its node not sent, and nothing of it was queued behind the unread
// stray, which the holder's read still judges a protocol error.
func TestStrayWaitEndsAtDeadline(t *testing.T) {
	r := newStrayRig(t, nil)
	r.stray(t, "STRAY!")
	waitsBefore := r.d.strayWaits.Load()
	b, done := r.echoAfter(100 * time.Millisecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Do: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call waited in enter past its deadline (30 s after a 100 ms timeout) for a read turn that never came")
	}
	if r.d.strayWaits.Load() == waitsBefore {
		t.Fatal("the call did not wait for the stray to be read")
	}
	if _, err := b.Last(0); !errors.Is(err, ErrNotSent) {
		t.Fatalf("node 0: %v, want ErrNotSent (nothing may go out behind an unread stray)", err)
	}
	cn := r.c.conns[0]
	cn.mu.Lock()
	queued := cn.q.n
	cn.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d commands queued behind the unread stray", queued)
	}
	// The holder reads at last: the stray breaks its connection, and a
	// new one answers.
	r.read()
	waitAllOK(t, r.c, 5*time.Second)
}
