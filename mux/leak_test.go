package mux

import (
	"context"
	"os"
	"runtime"
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

	const batches, cycles = 10000, 10
	ctx := context.Background()
	b := c.NewBatch()
	cmd := resp.AppendCommand(nil, "PING")
	fails := 0
	for k := 0; k < batches; k++ {
		if k%(batches/cycles) == batches/cycles/2 {
			node := cl.Nodes[(k/(batches/cycles))%5]
			if err := node.Restart(k%2 == 0, 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if k%(batches/cycles) == batches/cycles-1 {
			waitAllOK(t, c, 3*time.Second)
			fds := settle(func() int { return countFDs(t) }, fdsUp, 2*time.Second)
			if fds > fdsUp {
				t.Fatalf("after cycle %d: %d fds, %d with the client up", k/(batches/cycles), fds, fdsUp)
			}
		}
		b.Reset()
		b.Broadcast(cmd)
		out, err := c.Do(ctx, b, Policy{Quorum: 3})
		if err != nil {
			t.Fatal(err)
		}
		if out.Successes < 3 {
			fails++
		}
	}
	if fails > 0 {
		t.Logf("%d batches without quorum (around restarts)", fails)
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
