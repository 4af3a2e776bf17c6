package redlock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redmux/redmux/redlock"
)

// The fake nodes run in a child process, so allocs/op counts the client
// alone.

// BenchmarkAcquireRelease: TryAcquire + Release of one lock on 5 fake
// nodes, one goroutine.
func BenchmarkAcquireRelease(b *testing.B) {
	c := newClient(b, startExternalCluster(b, 5), redlock.WithNodeTimeout(time.Second))
	ctx := context.Background()
	warm(b, c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := c.TryAcquire(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAcquireReleaseParallel: one resource per goroutine.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	c := newClient(b, startExternalCluster(b, 5), redlock.WithNodeTimeout(time.Second))
	ctx := context.Background()
	warm(b, c)
	var id atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			l, err := c.TryAcquire(ctx, key)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkExtend: one Extend of a held lock on 5 fake nodes.
func BenchmarkExtend(b *testing.B) {
	c := newClient(b, startExternalCluster(b, 5), redlock.WithMaxExtensions(1<<62), redlock.WithNodeTimeout(time.Second))
	ctx := context.Background()
	warm(b, c)
	l, err := c.Acquire(ctx, "bench:extend", redlock.WithTTL(time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Extend(ctx, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = l.Release(ctx)
}
