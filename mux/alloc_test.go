//go:build !race && linux && !redmux_portable

package mux

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/redmux/redmux/redlock/scripts"
	"github.com/redmux/redmux/resp"
)

// TestZeroAllocs: in steady state one SET NX PX broadcast plus one EVALSHA
// broadcast (a lock acquire and release on 5 nodes) allocate nothing. The
// fake cluster runs in a child process, so only the client is counted.
func TestZeroAllocs(t *testing.T) {
	c := newTestClient(t, startChild(t, 5), nil)
	w := newLockWork(c)
	ctx := context.Background()
	for k := 0; k < 50; k++ { // warm up the buffers
		w.op(ctx)
	}
	if a := testing.AllocsPerRun(500, func() { w.op(ctx) }); a != 0 {
		t.Fatalf("%v allocs per acquire+release", a)
	}
	if w.fails != 0 {
		t.Fatalf("%d failed ops", w.fails)
	}
	// Quorum-early (replies abandoned, then read and dropped) allocates
	// nothing either.
	if a := testing.AllocsPerRun(200, func() { w.opQuorum(ctx) }); a != 0 {
		t.Fatalf("%v allocs per quorum op", a)
	}
}

// TestZeroAllocsConcurrent: 64 goroutines sharing the client's
// connections (their commands pipelined and written combined) allocate
// nothing per operation in steady state.
func TestZeroAllocsConcurrent(t *testing.T) {
	c := newTestClient(t, startChild(t, 5), func(cfg *Config) { cfg.Conns = 2 })
	const workers, warm, ops = 64, 30, 150
	ws := make([]*lockWork, workers)
	for i := range ws {
		ws[i] = newLockWork(c)
	}
	ctx := context.Background()
	run := func(n int) {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < n; k++ {
					w.op(ctx)
				}
			}()
		}
		wg.Wait()
	}
	run(warm)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run(ops)
	runtime.ReadMemStats(&after)
	// Starting 64 goroutines and the WaitGroup allocate a little, and on a
	// loaded machine the runtime's parking (sudog and timer refills) a
	// little more: 250-330 were seen for 9,600 pairs under a parallel
	// make test. Allow a tenth of an allocation per pair, not one per pair.
	total := workers * ops
	if a := after.Mallocs - before.Mallocs; a > uint64(total/10) {
		t.Fatalf("%d allocations for %d acquire+release pairs (%.3f per pair)", a, total, float64(a)/float64(total))
	}
	for _, w := range ws {
		if w.fails != 0 {
			t.Fatalf("%d failed ops", w.fails)
		}
	}
}

// TestScratchZeroAllocs: the Tour's way of building commands (encode into
// b.Scratch(), then Broadcast) allocates nothing per command once the
// batch exists: the documented example is the fast way.
func TestScratchZeroAllocs(t *testing.T) {
	c := newTestClient(t, startChild(t, 5), nil)
	b := c.NewBatch()
	ctx := context.Background()
	key, val := "lock:scratch", "unique-value-0001"
	pol := Policy{Quorum: c.N()/2 + 1, Success: ReplyOK}
	op := func() {
		b.Reset()
		b.SetKey(key)
		b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", key, val, "NX", "PX", "30000"))
		_, _ = c.Do(ctx, b, pol)
		b.Reset()
		b.Broadcast(resp.AppendCommand(b.Scratch(), "EVALSHA", scripts.Release.SHA, "1", key, val))
		_, _ = c.Do(ctx, b, Policy{Success: ReplyOne})
	}
	for k := 0; k < 20; k++ {
		op()
	}
	if a := testing.AllocsPerRun(200, op); a != 0 {
		t.Fatalf("%v allocs per acquire+release built with Scratch", a)
	}
	// Encoding alone, the four-allocation case the issue found.
	if a := testing.AllocsPerRun(200, func() {
		b.Reset()
		b.Broadcast(resp.AppendCommand(b.Scratch(), "SET", key, val, "NX", "PX", "30000"))
	}); a != 0 {
		t.Fatalf("%v allocs per command encoded into Scratch", a)
	}
}
