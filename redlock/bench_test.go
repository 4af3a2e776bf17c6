package redlock_test

import (
	"context"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redmux/redmux/internal/redisproc/redistest"
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
	benchAcquireReleaseParallel(b, c, 1)
}

// BenchmarkAcquireRelease256: TryAcquire + Release from 256 goroutines
// (128 per GOMAXPROCS, 2 on the project's machine; redmux-bench's -c 256),
// one resource each, on 5 real redis-servers: the client's CPU per lock
// pair (cpu-ns/op, this process's user+system time; the servers are other
// processes) at the concurrency issue 35's targets are set at. Beside
// mux's BenchmarkLockOp256 (the same commands through mux alone) it shows
// what redlock adds.
func BenchmarkAcquireRelease256(b *testing.B) {
	c := newClient(b, redistest.Addrs(redistest.StartN(b, 5, redistest.Options{})), redlock.WithNodeTimeout(time.Second), redlock.WithTrustNodesAtStart())
	benchAcquireReleaseParallel(b, c, max(1, 256/runtime.GOMAXPROCS(0)))
}

// benchAcquireReleaseParallel runs TryAcquire + Release on c from p
// goroutines per GOMAXPROCS, one resource each, and reports the process's
// CPU per pair.
func benchAcquireReleaseParallel(b *testing.B, c *redlock.Client, p int) {
	ctx := context.Background()
	warm(b, c)
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(p)
	cpu0 := processCPU()
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
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
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

// BenchmarkMultiLock: TryAcquireMulti + Release of k resources (one script
// per node covers them all) against k single locks taken and released one
// after another, as a caller without AcquireMulti would (and without its
// all-or-nothing guarantee).
func BenchmarkMultiLock(b *testing.B) {
	c := newClient(b, startExternalCluster(b, 5), redlock.WithNodeTimeout(time.Second))
	ctx := context.Background()
	warm(b, c)
	for _, k := range []int{1, 4, 16} {
		keys := make([]string, k)
		for i := range keys {
			keys[i] = "bench:multi:" + strconv.Itoa(i)
		}
		b.Run("multi/"+strconv.Itoa(k), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				l, err := c.TryAcquireMulti(ctx, keys)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("single/"+strconv.Itoa(k), func(b *testing.B) {
			b.ReportAllocs()
			ls := make([]redlock.Lock, k)
			for i := 0; i < b.N; i++ {
				for j, key := range keys {
					l, err := c.TryAcquire(ctx, key)
					if err != nil {
						b.Fatal(err)
					}
					ls[j] = l
				}
				for _, l := range ls {
					if err := l.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkKeepAlive10k: 10,000 locks kept alive by one Client's scheduler
// (TTL 2 s, extended every second: about 10,000 extensions a second); one
// op is one extension. Reported: the client process's CPU time per
// extension (user + system, getrusage), its allocations per extension
// (runtime.MemStats: the whole process; the fake runs in a child) and
// the locks lost at the end (0 unless the machine is overloaded).
func BenchmarkKeepAlive10k(b *testing.B) {
	const n = 10_000
	c := newClient(b, startExternalCluster(b, 5), redlock.WithNodeTimeout(time.Second),
		redlock.WithMaxExtensions(1<<62))
	ctx := context.Background()
	warm(b, c)
	locks := make([]redlock.Lock, n)
	for i := range locks {
		l, err := c.Acquire(ctx, "bench:ka:"+strconv.Itoa(i), redlock.WithTTL(2*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.KeepAlive(ctx); err != nil {
			b.Fatal(err)
		}
		locks[i] = l
	}
	defer func() {
		for _, l := range locks {
			_ = l.Release(ctx)
		}
	}()
	total := func() int {
		s := 0
		for _, l := range locks {
			s += l.Extensions()
		}
		return s
	}
	for total() < n { // every lock extended once: warm
		time.Sleep(10 * time.Millisecond)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := processCPU()
	e0 := total()
	b.ResetTimer()
	for total()-e0 < b.N {
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	ext := total() - e0
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(ext), "cpu-ns/ext")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(ext), "allocs/ext")
	// Locks the scheduler could not keep: a capacity figure, not a
	// failure (beside CI's CPU burners, make test's one pass lost one of
	// 10,000 while the rest were still being acquired).
	lost := 0
	for _, l := range locks {
		if l.Validity() == 0 {
			lost++
		}
	}
	b.ReportMetric(float64(lost), "lost")
}

// processCPU is this process's user + system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFencing: TryAcquire + Release with and without WithFencing,
// side by side, on 5 fake nodes in a child process and (when
// redis-server is installed) on 5 real redis-server processes; one
// goroutine ("c1") and 64 ("c64", one resource each). On the real
// servers it also reports their CPU per pair and node (srv-us/op/node:
// INFO's used_cpu_user + used_cpu_sys before and after, so the fenced
// scripts' cost beside the plain SET's; issue 47). cpu-ns/op is the
// client process's own CPU per pair.
func BenchmarkFencing(b *testing.B) {
	clusters := map[string]func(testing.TB) []string{
		"fake": func(tb testing.TB) []string { return startExternalCluster(tb, 5) },
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		clusters["real"] = func(tb testing.TB) []string { return redistest.Addrs(redistest.StartN(tb, 5, redistest.Options{})) }
	}
	for _, cname := range []string{"fake", "real"} {
		start, ok := clusters[cname]
		if !ok {
			continue
		}
		b.Run(cname, func(b *testing.B) {
			addrs := start(b)
			c := newClient(b, addrs, redlock.WithNodeTimeout(time.Second), redlock.WithTrustNodesAtStart())
			srv := func() float64 { return 0 }
			if cname == "real" {
				srv = func() float64 { return serversCPU(b, addrs) }
			}
			report := func(b *testing.B, cpu0 float64, own time.Duration) {
				b.ReportMetric(float64((processCPU()-own).Nanoseconds())/float64(b.N), "cpu-ns/op")
				if cname == "real" {
					b.ReportMetric((srv()-cpu0)*1e6/float64(b.N)/float64(len(addrs)), "srv-us/op/node")
				}
			}
			warm(b, c)
			ctx := context.Background()
			for _, mode := range []string{"plain", "fenced"} {
				var opts []redlock.LockOption
				if mode == "fenced" {
					opts = append(opts, redlock.WithFencing())
				}
				b.Run(mode+"/c1", func(b *testing.B) {
					b.ReportAllocs()
					cpu0, own := srv(), processCPU()
					defer report(b, cpu0, own)
					for i := 0; i < b.N; i++ {
						l, err := c.TryAcquire(ctx, "bench:fencing", opts...)
						if err != nil {
							b.Fatal(err)
						}
						if err := l.Release(ctx); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(mode+"/c64", func(b *testing.B) {
					var id atomic.Int64
					b.ReportAllocs()
					cpu0, own := srv(), processCPU()
					defer report(b, cpu0, own)
					b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						key := "bench:fencing:" + strconv.FormatInt(id.Add(1), 10)
						for pb.Next() {
							l, err := c.TryAcquire(ctx, key, opts...)
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
				})
			}
		})
	}
}

// BenchmarkObserver: the observer hook's cost, side by side in one run:
// acquire + release without an observer and with a counting one,
// alternating every 50 operations so that both see the same machine load
// (the nodes in a child process). Reports each mode's ns per pair and
// their ratio.
func BenchmarkObserver(b *testing.B) {
	addrs := startExternalCluster(b, 5)
	ctx := context.Background()
	var clients [2]*redlock.Client
	for i := range clients {
		opts := []redlock.Option{redlock.WithNodeTimeout(time.Second)}
		if i == 1 {
			opts = append(opts, redlock.WithObserver(&counter{}))
		}
		clients[i] = newClient(b, addrs, opts...)
		warm(b, clients[i])
	}
	var spent [2]time.Duration
	var done [2]int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		mode := (i / 50) % 2
		t0 := time.Now()
		for k := 0; k < 50 && i < b.N; k, i = k+1, i+1 {
			l, err := clients[mode].TryAcquire(ctx, "bench:observer")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
			done[mode]++
		}
		spent[mode] += time.Since(t0)
	}
	if done[0] > 0 && done[1] > 0 {
		none := float64(spent[0].Nanoseconds()) / float64(done[0])
		obs := float64(spent[1].Nanoseconds()) / float64(done[1])
		b.ReportMetric(none, "ns/pair-none")
		b.ReportMetric(obs, "ns/pair-observed")
		b.ReportMetric(obs/none, "observed/none")
	}
}

// serversCPU is the CPU time (s) the servers at addrs have used: the sum
// of their INFO used_cpu_user and used_cpu_sys.
func serversCPU(tb testing.TB, addrs []string) float64 {
	tb.Helper()
	var sum float64
	for _, a := range addrs {
		info := string(rawDo(tb, a, "INFO", "cpu").Data)
		for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
			f, err := strconv.ParseFloat(strings.TrimSpace(infoField(info, field)), 64)
			if err != nil {
				tb.Fatalf("INFO cpu from %s: %s: %v", a, field, err)
			}
			sum += f
		}
	}
	return sum
}
