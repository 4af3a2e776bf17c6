//go:build linux && !redmux_portable && (amd64 || arm64 || riscv64 || loong64 || ppc64le)

package mux

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redmux/redmux/resp"
)

// TestURingReplacedLinkReceiveDropped (issue 34, R12 b): a receive of a
// connection that was replaced, completed by the kernel before the
// replacement and read after it, is not the current connection's: the
// io_uring link's recvDone reads it only while its link is still the
// connection's (the live() guard), and drops it otherwise. Without the
// guard the old socket's bytes were read into the new connection (here: a
// stray with no call waiting, which breaks the new connection; with a
// call waiting, its reply).
//
// The order is fixed by holding the reader token, as the poller does for
// a sweep: the old connection's stray reaches the client (its receive's
// completion posted, not read), the test fails that connection as its
// reader would, the supervisor installs a new one, and only then does the
// test run the read that finds the old completion. The new connection
// must survive it and answer the next call.
func TestURingReplacedLinkReceiveDropped(t *testing.T) {
	requireURing(t)
	r := newStrayRig(t, func(cfg *Config) {
		cfg.Transport = TransportIOURing
		cfg.ReconnectMin, cfg.ReconnectMax = time.Millisecond, 5*time.Millisecond
	})
	c := r.c
	if c.Transport() != "io_uring" {
		t.Fatalf("transport %s, want io_uring", c.Transport())
	}
	cn := c.conns[0]
	old := cn.current()
	r.stray(t, "STRAY!")
	// The reader fails the old connection (as for a timeout); the
	// supervisor installs a new one while the old receive's completion
	// still waits in the queue.
	cn.fail(ErrConnBroken, errors.New("test: replaced"))
	var cur link
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if cur = cn.current(); cur != nil && cur != old {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the connection was not replaced")
		}
	}
	if !arrivedWhileIdle(c) {
		t.Fatal("the old receive's completion was read before the test's read")
	}
	r.read() // the sweep's read: the old completion is handled now

	if now := cn.current(); now != cur {
		t.Fatalf("the new connection was broken by the old one's receive (now %v)", now)
	}
	cb := c.NewBatch()
	cb.Add(0, resp.AppendCommand(nil, "ECHO", "after"))
	if _, err := c.Do(context.Background(), cb, Policy{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := cb.Last(0); err != nil || string(rep.Data) != "after" {
		t.Fatalf("the call after the replacement: %q %v", rep.Data, err)
	}
	r.h.mu.Lock()
	accepted := len(r.h.conns)
	r.h.mu.Unlock()
	if accepted != 2 {
		t.Fatalf("%d connections accepted, want 2: the new one was broken by the old one's receive", accepted)
	}
}
