//go:build !race

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
)

// The mux strategy's worker (redlock on mux plus this package's wrapper)
// allocates nothing per acquire+release, so allocs/op in reports is the
// lock path's own cost.
func TestMuxWorkerZeroAllocs(t *testing.T) {
	srv := redistest.StartN(t, 5, redistest.Options{})
	p := LockParams{TTL: 10 * time.Second, Timeout: 50 * time.Millisecond, DialTimeout: time.Second,
		DriftFactor: 0.01, DriftFixed: 2 * time.Millisecond}
	s, err := newMuxStrategy(redistest.Addrs(srv), p, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.NewWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"alloc:a", "alloc:b", "alloc:c"}
	i, acquired := 0, 0
	allocs := testing.AllocsPerRun(2000, func() {
		ok, err := w.Acquire(ctx, keys[i%len(keys)])
		i++
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		if ok {
			acquired++
			if err := w.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
	})
	if acquired == 0 {
		t.Fatal("no lock was acquired")
	}
	if allocs != 0 {
		t.Fatalf("mux worker: %v allocs per acquire+release, want 0", allocs)
	}
}
