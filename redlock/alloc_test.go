//go:build !race

package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock"
)

// The hot path allocates nothing in steady state. testing.AllocsPerRun
// counts the whole process, so the fake nodes run in a child process.
func TestZeroAllocs(t *testing.T) {
	c := newClient(t, startExternalCluster(t, 5), redlock.WithMaxExtensions(1<<62), redlock.WithNodeTimeout(time.Second))
	ctx := context.Background()
	warm(t, c)
	ttl := redlock.WithTTL(time.Minute)
	var err error
	acquireRelease := testing.AllocsPerRun(200, func() {
		l, e := c.TryAcquire(ctx, "alloc", ttl)
		if e != nil {
			err = e
			return
		}
		if e := l.Release(ctx); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx, "alloc:extend", ttl)
	if err != nil {
		t.Fatal(err)
	}
	extend := testing.AllocsPerRun(200, func() {
		if e := l.Extend(ctx, time.Minute); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if acquireRelease != 0 || extend != 0 {
		t.Fatalf("allocs per op: acquire+release %v, extend %v; want 0", acquireRelease, extend)
	}
}
