//go:build linux && !redmux_portable

package mux

import (
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver/realredis"
)

// TestPartialWrites: one real redis-server is paused (SIGSTOP, so it reads
// nothing) while a 6 MB-per-node batch is written: writes to it return
// EAGAIN and finish through EPOLLOUT once it resumes; every reply of every
// node is matched.
func TestPartialWrites(t *testing.T) {
	srv := realredis.StartNT(t, 5, realredis.Options{})
	c := newTestClient(t, realredis.Addrs(srv), nil)
	before := shortWrites.Load()
	if err := srv[0].Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(300 * time.Millisecond)
		_ = srv[0].Resume()
	}()
	testLargeBatch(t, c)
	<-resumed
	if shortWrites.Load() == before {
		t.Fatal("no write hit EAGAIN: the batch did not exercise partial writes")
	}
	testAllReplies(t, c)
}
