//go:build !race

package bench

import (
	"context"
	"testing"
)

// The mux strategy's worker (redlock on mux plus this package's wrapper)
// allocates nothing per acquire+release, so allocs/op in reports is the
// lock path's own cost. testing.AllocsPerRun counts the whole process, so
// the fake nodes run in a child process (this test binary, see TestMain);
// no redis-server is needed and the test never skips.
func TestMuxWorkerZeroAllocs(t *testing.T) {
	s := childMuxStrategy(t, 5, 2)
	w, err := s.NewWorker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"alloc:a", "alloc:b", "alloc:c"}
	i, acquired := 0, 0
	var opErr error
	allocs := testing.AllocsPerRun(2000, func() {
		ok, err := w.Acquire(ctx, keys[i%len(keys)])
		i++
		if err != nil {
			opErr = err
			return
		}
		if ok {
			acquired++
			if err := w.Release(ctx); err != nil {
				opErr = err
			}
		}
	})
	if opErr != nil {
		t.Fatal(opErr)
	}
	if acquired < 2000 {
		t.Fatalf("%d of 2000+ attempts acquired; want every one (keys are released each time)", acquired)
	}
	if allocs != 0 {
		t.Fatalf("mux worker: %v allocs per acquire+release, want 0", allocs)
	}
}
