package mux

import (
	"context"
	"sync"
	"testing"

	"github.com/redmux/redmux/fakeserver"
)

// Concurrent callers share writes: a caller that finds a connection's
// writer idle while others are active claims it, lets them append, then
// writes for all (pconn.send). 32 callers x 100 calls on 3 nodes over one
// connection per node must need far fewer socket writes than commands:
// without the claim it is about one write per command (9,229-9,440 writes
// for 9,600 commands in 3 runs at GOMAXPROCS 2, 9,600 at 1), with it 8-20
// commands per write at GOMAXPROCS 1, 2 and 4.
func TestConcurrentCallersShareWrites(t *testing.T) {
	cl := startFake(t, 3, fakeserver.Config{})
	c := newTestClient(t, cl.Addrs(), func(cfg *Config) { cfg.Conns = 1 })
	const callers, calls = 32, 100
	before := sockWrites.Load()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := c.NewBatch()
			for i := 0; i < calls; i++ {
				b.Reset()
				b.Broadcast([]byte("*1\r\n$4\r\nPING\r\n"))
				out, err := c.Do(context.Background(), b, Policy{Quorum: 3})
				if err != nil || out.Successes != 3 {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a call failed: %v", err)
	}
	writes := sockWrites.Load() - before
	commands := int64(callers * calls * 3)
	t.Logf("%d socket writes for %d commands (%.1f commands per write)", writes, commands, float64(commands)/float64(writes))
	if writes*2 > commands { // fewer than 2 commands per write
		t.Fatalf("%d socket writes for %d commands: concurrent callers' commands were not combined", writes, commands)
	}
}
