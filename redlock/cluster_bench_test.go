package redlock_test

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/redlock"
)

// BenchmarkClusterVsStandalone: TryAcquire + Release of one lock, one
// goroutine, on 3 real standalone redis-servers and on 3 real Redis
// Clusters of 3 primaries each (issue 33's must-show, side by side in one
// run): ns/op, allocs/op and the client's CPU per pair (getrusage of this
// process; the servers are other processes).
//
//	go test -run X -bench ClusterVsStandalone -benchmem -count 5 ./redlock
func BenchmarkClusterVsStandalone(b *testing.B) {
	redistest.Require(b)
	solo := redistest.Addrs(redistest.StartN(b, 3, redistest.Options{}))
	var clustered []string
	for i := 0; i < 3; i++ {
		clustered = append(clustered, clusterURL(redistest.StartCluster(b, redisproc.ClusterOptions{Primaries: clusterBenchShards()})))
	}
	for _, tc := range []struct {
		name  string
		addrs []string
	}{{"standalone", solo}, {"cluster", clustered}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClient(b, tc.addrs, redlock.WithNodeTimeout(time.Second), redlock.WithTrustNodesAtStart())
			ctx := context.Background()
			warm(b, c)
			// the bench key's shard connections read once before the
			// timer (their read buffers are made at the first reply)
			if l, err := c.TryAcquire(ctx, "bench"); err == nil {
				_ = l.Release(ctx)
			}
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
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
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			cpu := time.Duration(syscall.TimevalToNsec(r1.Utime) - syscall.TimevalToNsec(r0.Utime) + syscall.TimevalToNsec(r1.Stime) - syscall.TimevalToNsec(r0.Stime))
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// clusterBenchShards is the primaries per cluster of
// BenchmarkClusterVsStandalone: REDMUX_BENCH_SHARDS, default 3 (1 tells
// the client's routing cost from the servers': the same number of
// processes as the standalone run).
func clusterBenchShards() int {
	if n, err := strconv.Atoi(os.Getenv("REDMUX_BENCH_SHARDS")); err == nil && n > 0 {
		return n
	}
	return 3
}
