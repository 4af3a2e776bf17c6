package redlock

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
)

// TestKeepAliveRacingClose: KeepAlive and Close at once. Whichever wins,
// once both have returned the scheduler either never started or was
// stopped: a scheduler started after Close looked (its loop and workers
// running for a closed Client, for good) was what KeepAlive left 86 times
// in 300 before start moved under the scheduler's lock.
func TestKeepAliveRacingClose(t *testing.T) {
	cl, err := fakeserver.StartCluster(1, fakeserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		c, err := New(cl.Addrs(), WithTTL(time.Second), WithTrustNodesAtStart())
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.TryAcquire(ctx, "ka-close:"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = c.Close() }()
		go func() { defer wg.Done(); _, _ = l.KeepAlive(ctx) }()
		wg.Wait()
		s := &c.ka
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done != nil {
			select {
			case <-done:
			default:
				t.Fatalf("round %d: the keep-alive scheduler runs on after Close", i)
			}
		}
	}
}
