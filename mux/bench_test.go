package mux

import (
	"context"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/internal/lockcmd"
	"github.com/redmux/redmux/internal/redisproc/redistest"
	"github.com/redmux/redmux/resp"
)

// BenchmarkLockOp: one SET NX PX broadcast plus one EVALSHA broadcast per
// op on 5 real redis-servers (acquire + release), 0 allocs/op, from one
// caller, on each transport side by side, auto (the default as users get
// it) first (io_uring also reports its system calls per op).
func BenchmarkLockOp(b *testing.B) {
	srv := redistest.StartN(b, 5, redistest.Options{})
	for _, tr := range []Transport{TransportAuto, TransportEpoll, TransportIOURing} {
		b.Run(tr.String(), func(b *testing.B) {
			saved := testTransport
			testTransport = TransportAuto // auto as users get it, not the suite's transport
			defer func() { testTransport = saved }()
			c := newTestClient(b, redistest.Addrs(srv), func(cfg *Config) { cfg.Transport = tr })
			if tr != TransportAuto && c.Transport() != tr.String() {
				b.Skipf("SKIPPED: %s", c.Transport())
			}
			b.Logf("transport %s", c.Transport())
			w := newLockWork(c)
			ctx := context.Background()
			for k := 0; k < 50; k++ {
				w.op(ctx)
			}
			enters := uringEnters()
			b.ReportAllocs()
			cpu := startCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.op(ctx)
			}
			b.StopTimer()
			cpu.report(b)
			if strings.HasPrefix(c.Transport(), "io_uring") {
				b.ReportMetric(float64(uringEnters()-enters)/float64(b.N), "io_uring_enter/op")
			}
			if w.fails != 0 {
				b.Fatalf("%d failed ops", w.fails)
			}
		})
	}
}

// BenchmarkLockOpParallel: the same op from GOMAXPROCS goroutines sharing
// one client (their commands pipelined on its shared connections).
func BenchmarkLockOpParallel(b *testing.B) { benchLockOpParallel(b, 1) }

// BenchmarkLockOp256: BenchmarkLockOpParallel's op from 256 goroutines
// (128 per GOMAXPROCS, 2 on the project's machine; redmux-bench's -c 256)
// sharing one client: the client's CPU per lock pair (cpu-ns/op) under the
// concurrency issue 35's targets are set at, in a Go benchmark, so that
// before/after rounds compare with benchstat (results/cost/README.md).
func BenchmarkLockOp256(b *testing.B) {
	benchLockOpParallel(b, max(1, 256/runtime.GOMAXPROCS(0)))
}

// benchLockOpParallel runs the lock op from p goroutines per GOMAXPROCS
// sharing one client on 5 real redis-servers.
func benchLockOpParallel(b *testing.B, p int) {
	srv := redistest.StartN(b, 5, redistest.Options{})
	c := newTestClient(b, redistest.Addrs(srv), func(cfg *Config) { cfg.Conns = 0 })
	b.ReportAllocs()
	b.SetParallelism(p)
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		w := newLockWork(c)
		ctx := context.Background()
		for pb.Next() {
			w.op(ctx)
		}
	})
	cpu.report(b)
}

// BenchmarkSet256: one plain SET per op (a one-command batch, Policy's
// defaults) from 256 goroutines (128 per GOMAXPROCS) sharing one client on
// one real redis-server: the client's CPU per command (cpu-ns/op) that
// issue 47 sets against redis-benchmark's (-P 16 -c 50) CPU per SET;
// results/cost/set.sh runs the two side by side.
func BenchmarkSet256(b *testing.B) {
	srv := redistest.StartN(b, 1, redistest.Options{})
	c := newTestClient(b, redistest.Addrs(srv), func(cfg *Config) { cfg.Conns = 0 })
	var id atomic.Int64
	var fails atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 256/runtime.GOMAXPROCS(0)))
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		bt := c.NewBatch()
		cmd := resp.AppendCommand(nil, "SET", "set:"+strconv.FormatInt(id.Add(1), 10), "v")
		ctx := context.Background()
		for pb.Next() {
			bt.Reset()
			bt.AddExpect(0, cmd, ExpectSimple)
			if out, err := c.Do(ctx, bt, Policy{Success: isOK}); err != nil || out.Successes != 1 {
				fails.Add(1)
			}
		}
	})
	cpu.report(b)
	if n := fails.Load(); n != 0 {
		b.Fatalf("%d of %d SETs failed", n, b.N)
	}
}

// cpuMeter measures the client's CPU time over a benchmark's loop: the
// process's user+system time (getrusage; the redis-servers are other
// processes), reported per op as cpu-ns/op. Wall time per op (ns/op)
// includes the servers' time and the network's; this is what the client
// itself costs.
type cpuMeter struct{ t0 int64 }

func startCPU() cpuMeter { return cpuMeter{processCPU()} }

func (m cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-m.t0)/float64(b.N), "cpu-ns/op")
}

func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// plainConn is one blocking net.Conn with a read buffer: the baseline
// strategies' connection.
type plainConn struct {
	nc   net.Conn
	buf  []byte
	r, w int
}

func dialPlain(tb testing.TB, addr string) *plainConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	return &plainConn{nc: nc, buf: make([]byte, 4096)}
}

func (p *plainConn) send(cmd []byte) error {
	_, err := p.nc.Write(cmd)
	return err
}

func (p *plainConn) recv() error {
	for {
		if p.r < p.w {
			_, n, err := resp.Parse(p.buf[p.r:p.w])
			if err == nil {
				p.r += n
				if p.r == p.w {
					p.r, p.w = 0, 0
				}
				return nil
			}
			if err != resp.ErrIncomplete {
				return err
			}
		}
		if p.w == len(p.buf) {
			p.w = copy(p.buf, p.buf[p.r:p.w])
			p.r = 0
		}
		n, err := p.nc.Read(p.buf[p.w:])
		if err != nil {
			return err
		}
		p.w += n
	}
}

func (p *plainConn) roundTrip(cmd []byte) error {
	if err := p.send(cmd); err != nil {
		return err
	}
	return p.recv()
}

// latencies records one sample per op and reports p50/p99 in µs.
type latencies struct{ s []int64 }

func (l *latencies) add(d time.Duration) { l.s = append(l.s, int64(d)) }

func (l *latencies) report(b *testing.B) {
	if len(l.s) == 0 {
		return
	}
	slices.Sort(l.s)
	pct := func(p float64) float64 {
		i := int(p * float64(len(l.s)-1))
		return float64(l.s[i]) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50_us")
	b.ReportMetric(pct(0.99), "p99_us")
}

type strategy func(b *testing.B, addrs []string, cmd []byte, p Policy)

func runMux(b *testing.B, addrs []string, cmd []byte, p Policy) {
	c := newTestClient(b, addrs, func(cfg *Config) { cfg.Timeout = time.Second })
	bt := c.NewBatch()
	bt.Broadcast(cmd)
	ctx := context.Background()
	lat := latencies{s: make([]int64, 0, b.N)}
	for k := 0; k < 20; k++ {
		_, _ = c.Do(ctx, bt, p)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		out, err := c.Do(ctx, bt, p)
		lat.add(time.Since(t0))
		if err != nil || out.Failures > 0 {
			b.Fatalf("%+v %v", out, err)
		}
	}
	b.StopTimer()
	lat.report(b)
}

func runSingle(b *testing.B, addrs []string, cmd []byte, _ Policy) {
	pc := dialPlain(b, addrs[0])
	lat := latencies{s: make([]int64, 0, b.N)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := pc.roundTrip(cmd); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

func runSeq(b *testing.B, addrs []string, cmd []byte, _ Policy) {
	pcs := make([]*plainConn, len(addrs))
	for i, a := range addrs {
		pcs[i] = dialPlain(b, a)
	}
	lat := latencies{s: make([]int64, 0, b.N)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for _, pc := range pcs {
			if err := pc.roundTrip(cmd); err != nil {
				b.Fatal(err)
			}
		}
		lat.add(time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

func runFanout(b *testing.B, addrs []string, cmd []byte, _ Policy) {
	pcs := make([]*plainConn, len(addrs))
	for i, a := range addrs {
		pcs[i] = dialPlain(b, a)
	}
	errs := make([]error, len(pcs))
	lat := latencies{s: make([]int64, 0, b.N)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		var wg sync.WaitGroup
		for j, pc := range pcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = pc.roundTrip(cmd)
			}()
		}
		wg.Wait()
		lat.add(time.Since(t0))
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkLatencyCompare puts side by side, per op, one SET NX PX to
// every one of 5 nodes through: mux (one broadcast batch), a single-node
// round trip on one plain connection, the naive sequential loop over 5
// plain connections, and a goroutine-per-node fan-out; on 5 real
// redis-servers, on 5 fake nodes with 1ms added latency, and on 5 fake
// nodes where one is 10ms slower than the others (mux with a quorum policy,
// healthy and slow). Metrics p50_us and p99_us come from the sorted
// samples of each sub-benchmark. Record with:
//
//	go test -run '^$' -bench BenchmarkLatencyCompare -benchtime 3000x ./mux
func BenchmarkLatencyCompare(b *testing.B) {
	cmd := lockcmd.AppendSetNXPX(nil, "bench:latency", []byte("0123456789abcdefghij"), 60000)
	strategies := []struct {
		name string
		f    strategy
	}{{"mux", runMux}, {"single", runSingle}, {"seq", runSeq}, {"fanout", runFanout}}

	b.Run("real5", func(b *testing.B) {
		addrs := redistest.Addrs(redistest.StartN(b, 5, redistest.Options{}))
		for _, s := range strategies {
			b.Run(s.name, func(b *testing.B) { s.f(b, addrs, cmd, Policy{}) })
		}
	})
	b.Run("fake5_1ms", func(b *testing.B) {
		cl := startFake(b, 5, fakeserver.Config{})
		for _, n := range cl.Nodes {
			n.SetLatency(time.Millisecond, 0)
		}
		for _, s := range strategies {
			b.Run(s.name, func(b *testing.B) { s.f(b, cl.Addrs(), cmd, Policy{}) })
		}
	})
	b.Run("fake5_1ms_quorum", func(b *testing.B) {
		cl := startFake(b, 5, fakeserver.Config{})
		for _, n := range cl.Nodes {
			n.SetLatency(time.Millisecond, 0)
		}
		q := Policy{Quorum: 3}
		b.Run("mux_healthy", func(b *testing.B) { runMux(b, cl.Addrs(), cmd, q) })
		cl.Nodes[4].SetLatency(11*time.Millisecond, 0)
		b.Run("mux_one_slow_10ms", func(b *testing.B) { runMux(b, cl.Addrs(), cmd, q) })
	})
}
