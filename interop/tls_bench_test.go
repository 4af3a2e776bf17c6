package interop

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
	"github.com/redmux/redmux/internal/nodeaddr"
	"github.com/redmux/redmux/internal/redisproc"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/mux"
	"github.com/redmux/redmux/redlock"
)

// BenchmarkLockTLS compares redmux (redlock on mux) with redsync (on one
// go-redis client per node) on the same 5 local redis-servers, plaintext
// and TLS-only (certificates made for the run), in one run: each operation
// is an acquire of a random key (one try) and its release, from
// parallel goroutines (-cpu sets GOMAXPROCS; 8 goroutines per CPU), with
// the same per-node timeout (100ms) and the same success rule (acquired on
// a quorum, released on a quorum). Besides ns/op it reports ops/s, the p50
// and p99 of an operation, and failed operations.
//
//	cd interop && go test -run '^$' -bench LockTLS -benchtime 5s
func BenchmarkLockTLS(b *testing.B) {
	files := redistest.Certs(b, redisproc.CertOptions{})
	pool, err := nodeaddr.LoadCertPool(files.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"plain", "tls"} {
		opt := redistest.Options{}
		var tc *tls.Config
		if mode == "tls" {
			opt.TLS = files
			tc = &tls.Config{RootCAs: pool}
		}
		srv := redistest.StartN(b, 5, opt)
		addrs := redistest.Addrs(srv)
		b.Run(mode+"/redmux", func(b *testing.B) {
			// The per-node timeout redsync uses here: 1% of the 10s expiry.
			c, err := redlock.New(addrs, redlock.WithTrustNodesAtStart(), redlock.WithMuxConfig(mux.Config{TLS: tc}), redlock.WithNodeTimeout(100*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runLockBench(b, func(ctx context.Context, key string) bool {
				l, err := c.TryAcquire(ctx, key)
				if err != nil {
					return false
				}
				// As redsync's Unlock: released on a quorum is a success.
				var re *redlock.ReleaseError
				err = l.Release(ctx)
				return err == nil || (errors.As(err, &re) && re.Released >= c.Quorum())
			})
		})
		b.Run(mode+"/redsync", func(b *testing.B) {
			var pools []redis.Pool
			for _, a := range addrs {
				o := &goredislib.Options{Addr: a, MaxRetries: -1}
				if tc != nil {
					o.TLSConfig = tc.Clone()
					o.TLSConfig.ServerName = "127.0.0.1"
				}
				rc := goredislib.NewClient(o)
				defer rc.Close()
				pools = append(pools, goredis.NewPool(rc))
			}
			rs := redsync.New(pools...)
			runLockBench(b, func(ctx context.Context, key string) bool {
				m := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
				if err := m.LockContext(ctx); err != nil {
					return false
				}
				ok, err := m.UnlockContext(ctx)
				return ok && err == nil
			})
		})
	}
}

// runLockBench runs op b.N times from parallel goroutines on random keys
// and reports ops/s, the p50 and p99 of an operation, and failures.
func runLockBench(b *testing.B, op func(ctx context.Context, key string) bool) {
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	fails := 0
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		f := 0
		for pb.Next() {
			key := "interop-tls:" + strconv.Itoa(rand.IntN(1_000_000))
			t0 := time.Now()
			if !op(ctx, key) {
				f++
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		fails += f
		mu.Unlock()
	})
	el := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(len(lat))/el.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(fails), "failed")
}
