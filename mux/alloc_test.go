//go:build !race && linux && !redmux_portable

package mux

import (
	"context"
	"testing"

	"github.com/redmux/redmux/internal/redisproc/redistest"
)

// TestZeroAllocs: in steady state one SET NX PX broadcast plus one EVALSHA
// broadcast (a lock acquire and release on 5 nodes) allocate nothing. Real
// redis-servers run in other processes, so only the client is counted.
func TestZeroAllocs(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	c := newTestClient(t, redistest.Addrs(srv), nil)
	w := newLockWork(c)
	ctx := context.Background()
	for k := 0; k < 50; k++ { // warm up every lane's buffers
		w.op(ctx)
	}
	if a := testing.AllocsPerRun(500, func() { w.op(ctx) }); a != 0 {
		t.Fatalf("%v allocs per acquire+release", a)
	}
	if w.fails != 0 {
		t.Fatalf("%d failed ops", w.fails)
	}
	// Quorum-early (replies owed, then skipped) allocates nothing either.
	if a := testing.AllocsPerRun(200, func() { w.opQuorum(ctx) }); a != 0 {
		t.Fatalf("%v allocs per quorum op", a)
	}
}
