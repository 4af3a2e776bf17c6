package observe_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redmux/redmux/fakeserver"
	"github.com/redmux/redmux/interop/observe"
	"github.com/redmux/redmux/redlock"
)

// workload runs, on a 5-node fake cluster: one acquisition that succeeds,
// one that is refused (held) with 2 attempts, an extension, an extension
// that finds the lock lost (deleted on every node once all five hold it:
// the refusals decide however slow a node answers), a
// kept-alive lock lost the same way (its keep-alive ends: one lost
// keepalive_end, and its extension's lost keepalive), then, with node 4
// down, an acquisition and a release (node errors).
func workload(t *testing.T, obs redlock.Observer) {
	t.Helper()
	o := &endCounter{o: obs}
	cl, err := fakeserver.StartCluster(5, fakeserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	c, err := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithObserver(o), redlock.WithNodeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	l, err := c.Acquire(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "m", redlock.WithTries(2), redlock.WithRetryDelay(time.Millisecond, 2*time.Millisecond)); err == nil {
		t.Fatal("acquired a held lock")
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	waitAllHold(t, cl, "m", l.Value()) // no SET still on its way to undo the deletes
	for _, n := range cl.Nodes {       // on every node: the refusals decide the call, however slow a node
		n.Del("m")
	}
	if err := l.Extend(ctx, time.Second); err == nil {
		t.Fatal("extended a lost lock")
	}
	k, err := c.Acquire(ctx, "k", redlock.WithTTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	waitAllHold(t, cl, "k", k.Value())
	for _, n := range cl.Nodes { // on every node: the refusals decide the call, however slow a node
		n.Del("k")
	}
	kctx, err := k.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-kctx.Done()
	for end := time.Now().Add(2 * time.Second); o.ends.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if o.ends.Load() != 1 {
		t.Fatalf("%d keep-alive ends reported, want 1", o.ends.Load())
	}
	cl.Nodes[4].Down()
	l2, err := c.Acquire(ctx, "m2")
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitAllHold waits until every node holds key with value v: the
// acquisition returned at its quorum, and a SET still on its way to a
// node would put back a key the test deletes.
func waitAllHold(t *testing.T, cl *fakeserver.Cluster, key string, v []byte) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; {
		all := true
		for _, n := range cl.Nodes {
			if got, ok := n.Get(key); !ok || string(got) != string(v) {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s is not on every node", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// endCounter forwards to o and counts OpKeepAliveEnd events.
type endCounter struct {
	o    redlock.Observer
	ends atomic.Int64
}

func (e *endCounter) Observe(ev redlock.Event) {
	if ev.Op == redlock.OpKeepAliveEnd {
		e.ends.Add(1)
	}
	e.o.Observe(ev)
}

func TestPrometheus(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, err := observe.NewPrometheus(reg, "app")
	if err != nil {
		t.Fatal(err)
	}
	workload(t, p)
	want := `
# HELP app_redlock_acquire_attempts_total Acquisition attempts made.
# TYPE app_redlock_acquire_attempts_total counter
app_redlock_acquire_attempts_total 5
# HELP app_redlock_acquire_contended_total Acquisitions that met another holder.
# TYPE app_redlock_acquire_contended_total counter
app_redlock_acquire_contended_total 1
# HELP app_redlock_locks_lost_total Operations that found the lock lost or expired.
# TYPE app_redlock_locks_lost_total counter
app_redlock_locks_lost_total{op="acquire"} 0
app_redlock_locks_lost_total{op="extend"} 1
app_redlock_locks_lost_total{op="keepalive"} 1
app_redlock_locks_lost_total{op="keepalive_end"} 1
app_redlock_locks_lost_total{op="release"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "app_redlock_acquire_attempts_total",
		"app_redlock_acquire_contended_total", "app_redlock_locks_lost_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "app_redlock_node_errors_total"); n < 1 {
		t.Fatalf("node errors: %d series, want the down node's", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "app_redlock_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var op, oc string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "op":
					op = lp.GetValue()
				case "outcome":
					oc = lp.GetValue()
				}
			}
			counts[op+"/"+oc] = m.GetHistogram().GetSampleCount()
		}
	}
	for k, v := range map[string]uint64{"acquire/ok": 3, "acquire/error": 1, "extend/ok": 1, "extend/error": 1, "keepalive/error": 1, "release/ok": 1} {
		if counts[k] != v {
			t.Errorf("duration samples %s = %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
}

func TestOTel(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	o, err := observe.NewOTel(mp.Meter("redlock"))
	if err != nil {
		t.Fatal(err)
	}
	workload(t, o)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	hist := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sums[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value("op")
					oc, _ := p.Attributes.Value("outcome")
					hist[op.AsString()+"/"+oc.AsString()] += p.Count
				}
			}
		}
	}
	for k, v := range map[string]int64{"redlock.acquire.attempts": 5, "redlock.acquire.contended": 1, "redlock.locks.lost": 3} {
		if sums[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, sums[k], v, sums)
		}
	}
	if sums["redlock.node.errors"] < 1 {
		t.Errorf("node errors %d, want the down node's", sums["redlock.node.errors"])
	}
	for k, v := range map[string]uint64{"acquire/ok": 3, "acquire/error": 1, "extend/ok": 1, "extend/error": 1, "keepalive/error": 1, "release/ok": 1} {
		if hist[k] != v {
			t.Errorf("duration samples %s = %d, want %d (all: %v)", k, hist[k], v, hist)
		}
	}
}

// Export a Client's lock metrics to Prometheus: pass the observer to
// redlock.New, register reg with your HTTP handler (promhttp.HandlerFor).
func ExampleNewPrometheus() {
	cl, _ := fakeserver.StartCluster(5, fakeserver.Config{})
	defer cl.Close()
	reg := prometheus.NewRegistry()
	obs, err := observe.NewPrometheus(reg, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := redlock.New(cl.Addrs(), redlock.WithTrustNodesAtStart(), redlock.WithObserver(obs)) // nodes just started
	defer c.Close()
	l, _ := c.Acquire(context.Background(), "job")
	_ = l.Release(context.Background())

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "redlock_acquire_attempts_total" {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output: redlock_acquire_attempts_total 1
}
