//go:build linux && !redmux_portable

package mux

import (
	"testing"
	"time"
)

// handRig is a strayRig whose token holder is delivering (as inside the
// set's handle) and in which another caller counts as in Do, so that a
// call claims its writer instead of writing at once.
func newHandRig(t *testing.T) *strayRig {
	t.Helper()
	r := newStrayRig(t, nil)
	r.d.delivering.Store(true)
	r.c.active.Add(1)
	t.Cleanup(func() { r.c.active.Add(-1) })
	return r
}

// unsent reports whether the connection holds queued bytes not written.
func unsent(cn *pconn) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.wq) > 0
}

// waitFor polls cond (5 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// handEnd gives the token back (the rig's holder read) and checks the call.
func handEnd(t *testing.T, r *strayRig, b *Batch, done chan error) {
	t.Helper()
	r.read()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the call never returned")
	}
	if rep, err := b.Last(0); err != nil || string(rep.Data) != "after" {
		t.Fatalf("reply %q %v", rep.Data, err)
	}
}

// TestHandOffWrittenAtDeliveryEnd: a call made while the token's holder
// delivers replies queues its command and hands its claimed writer to
// the holder (no write of its own), and the holder writes it when its
// delivery ends.
func TestHandOffWrittenAtDeliveryEnd(t *testing.T) {
	r := newHandRig(t)
	cn := r.c.conns[0]
	b, done := r.echoAfter(10 * time.Second)
	handed := func() bool {
		r.d.hmu.Lock()
		defer r.d.hmu.Unlock()
		return len(r.d.handed) > 0
	}
	waitFor(t, "the call did not hand its writer to the delivering holder", handed)
	if !unsent(cn) {
		t.Fatal("the handed command was written before the delivery ended")
	}
	r.d.endDelivery()
	waitFor(t, "the delivery ended and the handed command was never written", func() bool { return !unsent(cn) })
	handEnd(t, r, b, done)
}

// TestHandOffAfterDeliveryEnded: a holder may end its delivery, and
// write what was handed so far, between a caller's look (delivering) and
// its append: the caller then writes its claims itself. Stranded, they
// would wait for a delivery that may never come (a quiet client's holder
// parks).
func TestHandOffAfterDeliveryEnded(t *testing.T) {
	r := newHandRig(t)
	cn := r.c.conns[0]
	hooked := make(chan struct{})
	r.d.handHook = func() {
		r.d.endDelivery() // the holder's delivery ends in the window
		close(hooked)
	}
	b, done := r.echoAfter(10 * time.Second)
	select {
	case <-hooked:
	case <-time.After(5 * time.Second):
		t.Fatal("the call never handed off")
	}
	waitFor(t, "claims appended after the delivery ended were never written", func() bool { return !unsent(cn) })
	handEnd(t, r, b, done)
}
