package mux

import (
	"context"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/resp"
)

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// settle waits (bounded) until f() <= want and returns the last value.
func settle(f func() int, want int, within time.Duration) int {
	end := time.Now().Add(within)
	v := f()
	for v > want && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
		runtime.GC()
		v = f()
	}
	return v
}

// TestLeakFDsGoroutines runs 10,000 batches while nodes restart over and
// over: file descriptors and goroutines stay stable during the run, and
// after Close every one the client opened is gone.
func TestLeakFDsGoroutines(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts fds through /proc")
	}
	cl := startFake(t, 5, fakeserver.Config{})
	fds0 := countFDs(t)
	gor0 := runtime.NumGoroutine()

	c, err := New(Config{
		Addrs: cl.Addrs(), Conns: 2, Timeout: 200 * time.Millisecond, HardTimeout: 300 * time.Millisecond,
		Scripts: lockScripts(), ReconnectMin: 5 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitAllOK(t, c, 2*time.Second)
	fdsUp := countFDs(t)
	gorUp := runtime.NumGoroutine()
	t.Logf("baseline fds %d goroutines %d; client up: fds %d goroutines %d", fds0, gor0, fdsUp, gorUp)

	// 10 cycles; in each, a node restarts (with or without its data) while
	// 64 goroutines share the client, 10,000 batches in all.
	const batches, cycles, callers = 10000, 10, 64
	ctx := context.Background()
	cmd := resp.AppendCommand(nil, "PING")
	var fails atomic.Int64
	for cyc := 0; cyc < cycles; cyc++ {
		node := cl.Nodes[cyc%5]
		var wg sync.WaitGroup
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				b := c.NewBatch()
				for k := 0; k < batches/cycles/callers; k++ {
					b.Reset()
					b.Broadcast(cmd)
					out, err := c.Do(ctx, b, Policy{Quorum: 3})
					if err != nil || out.Successes < 3 {
						fails.Add(1)
					}
				}
			}(g)
		}
		if err := node.Restart(cyc%2 == 0, 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		waitAllOK(t, c, 3*time.Second)
		fds := settle(func() int { return countFDs(t) }, fdsUp, 2*time.Second)
		if fds > fdsUp {
			t.Fatalf("after cycle %d: %d fds, %d with the client up", cyc, fds, fdsUp)
		}
	}
	if n := fails.Load(); n > 0 {
		t.Logf("%d batches without quorum (around restarts)", n)
	}
	if g := settle(runtime.NumGoroutine, gorUp, 2*time.Second); g > gorUp {
		t.Fatalf("goroutines grew: %d, %d with the client up", g, gorUp)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fds := settle(func() int { return countFDs(t) }, fds0, 3*time.Second); fds != fds0 {
		t.Fatalf("fds after Close: %d, baseline %d", fds, fds0)
	}
	if g := settle(runtime.NumGoroutine, gor0, 3*time.Second); g > gor0 {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines after Close: %d, baseline %d\n%s", g, gor0, buf[:runtime.Stack(buf, true)])
	}
}
