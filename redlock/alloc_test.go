//go:build !race

package redlock_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
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
	keys := []string{"alloc:m1", "alloc:m2", "alloc:m3", "alloc:m4"}
	multi := testing.AllocsPerRun(200, func() {
		l, e := c.TryAcquireMulti(ctx, keys, ttl)
		if e != nil {
			err = e
			return
		}
		if e := l.Extend(ctx, time.Minute); e != nil {
			err = e
		}
		if e := l.Release(ctx); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	fence := redlock.WithFencing()
	fenced := testing.AllocsPerRun(200, func() {
		l, e := c.TryAcquire(ctx, "alloc:fenced", ttl, fence)
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
	cnt := &counter{}
	oc := newClient(t, startExternalCluster(t, 5), redlock.WithObserver(cnt), redlock.WithNodeTimeout(time.Second))
	warm(t, oc)
	observed := testing.AllocsPerRun(200, func() {
		l, e := oc.TryAcquire(ctx, "alloc:observed", ttl)
		if e != nil {
			err = e
			return
		}
		if e := l.Extend(ctx, time.Minute); e != nil {
			err = e
		}
		if e := l.Release(ctx); e != nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if cnt.n[redlock.OpAcquire].Load() < 200 || cnt.n[redlock.OpRelease].Load() < 200 {
		t.Fatalf("the observer saw %d acquisitions, %d releases", cnt.n[redlock.OpAcquire].Load(), cnt.n[redlock.OpRelease].Load())
	}
	if acquireRelease != 0 || extend != 0 || multi != 0 || fenced != 0 || observed != 0 {
		t.Fatalf("allocs per op: acquire+release %v, extend %v, multi acquire+extend+release %v, fenced acquire+release %v, observed acquire+extend+release %v; want 0",
			acquireRelease, extend, multi, fenced, observed)
	}
}

// Keep-alive's steady state allocates nothing per extension: with 200
// locks extended every ~50 ms for a while, the process's allocations
// (runtime.MemStats.Mallocs, the whole process: the fake nodes run in a
// child) stay far below one per extension, with an observer that
// allocates nothing (the events go through the outbox).
func TestKeepAliveZeroAllocs(t *testing.T) {
	cnt := &counter{}
	c := newClient(t, startExternalCluster(t, 5), redlock.WithMaxExtensions(1<<62), redlock.WithNodeTimeout(time.Second), redlock.WithObserver(cnt))
	ctx := context.Background()
	warm(t, c)
	const n = 200
	locks := make([]redlock.Lock, n)
	names := make([]string, n)
	for i := range names {
		names[i] = "ka-alloc:" + strconv.Itoa(i)
	}
	for i := range locks {
		l, err := c.Acquire(ctx, names[i], redlock.WithTTL(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.KeepAlive(ctx); err != nil {
			t.Fatal(err)
		}
		locks[i] = l
	}
	total := func() int {
		s := 0
		for _, l := range locks {
			s += l.Extensions()
		}
		return s
	}
	time.Sleep(300 * time.Millisecond) // warm: buffers grown, workers started
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	e0 := total()
	time.Sleep(time.Second)
	e1 := total()
	runtime.ReadMemStats(&m1)
	ext := e1 - e0
	mallocs := m1.Mallocs - m0.Mallocs
	t.Logf("%d extensions, %d mallocs in the process", ext, mallocs)
	if ext < n {
		t.Fatalf("only %d extensions of %d locks in 1s", ext, n)
	}
	if k := cnt.n[redlock.OpKeepAlive].Load(); k < int64(ext) {
		t.Fatalf("the observer saw %d keep-alive extensions of %d", k, ext)
	}
	if float64(mallocs) > 0.05*float64(ext) {
		t.Fatalf("%d mallocs for %d extensions: want ~0 per extension", mallocs, ext)
	}
	for _, l := range locks {
		if l.Validity() == 0 {
			t.Fatalf("%v lost", l)
		}
		_ = l.Release(ctx)
	}
}

// The allocation warning of the package doc: testing.AllocsPerRun counts
// the whole process, so an in-process fake cluster's allocations show up
// in the client's count, and the same calls on nodes in a child process
// show 0.
func TestAllocsCountTheWholeProcess(t *testing.T) {
	cl, err := fakeserver.StartCluster(5, fakeserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	seedMarkers(t, cl.Addrs()...)
	tests := []struct {
		name     string
		addrs    []string
		inServer bool // the nodes run in this process
	}{
		{"fake in this process", cl.Addrs(), true},
		{"fake in a child process", startExternalCluster(t, 5), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.addrs, redlock.WithNodeTimeout(time.Second))
			ctx := context.Background()
			warm(t, c)
			var err error
			a := testing.AllocsPerRun(200, func() {
				l, e := c.TryAcquire(ctx, "alloc:whole-process")
				if e == nil {
					e = l.Release(ctx)
				}
				if e != nil {
					err = e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.1f allocations per Acquire+Release", a)
			if tc.inServer && a < 5 {
				t.Fatalf("%.1f allocations with the fake nodes in this process: the docs' warning (about 40, the fake's) no longer holds; update redlock/doc.go, README.md and docs/REDLOCK.md", a)
			}
			if !tc.inServer && a != 0 {
				t.Fatalf("%.1f allocations with the nodes in a child process, want 0", a)
			}
		})
	}
}
