package load

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"
)

// The buffered recorders give the same histograms, bucket for bucket, as
// recording every value straight into one histogram per metric: over
// intervals (buffers flushed when full and drained at each interval's end)
// and in the totals, clamped values included.
func TestRecordersMatchDirectHistograms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const workers = 7
	ws := make([]Worker, workers)
	for i := range ws {
		ws[i] = nullWorker{}
	}
	ls := newLoadState(RunConfig{}, nil, ws)
	log := &memLog{}
	c := newCollector(ls, "x", "x", log, nil)
	want := NewHists()
	now := time.Now()
	c.last = now
	for iv := 0; iv < 5; iv++ {
		wantIv := NewHists()
		for k := 0; k < 3000+iv*500; k++ {
			wi, m := r.IntN(workers), r.IntN(NumMetrics)
			var d time.Duration
			switch r.IntN(20) {
			case 0:
				d = time.Duration(r.IntN(1000)) // below 1us
			case 1:
				d = time.Minute + time.Duration(r.Int64N(int64(time.Hour))) // above 60s
			default:
				d = time.Duration(r.ExpFloat64() * 2e6)
			}
			rec := ls.recs[wi]
			rec.mu.Lock()
			rec.record(m, d)
			rec.acquired++
			rec.mu.Unlock()
			Record(want[m], d)
			Record(wantIv[m], d)
		}
		now = now.Add(time.Second)
		c.collect(now)
		for m := range NumMetrics {
			got := log.last[Metrics[m]]
			require.NotNil(t, got, "interval %d %s", iv, Metrics[m])
			require.Equal(t, wantIv[m].Distribution(), got.Distribution(), "interval %d %s", iv, Metrics[m])
		}
		log.last = nil
	}
	c.final(now.Add(time.Second))
	var ops int64
	for m := range NumMetrics {
		require.Equal(t, want[m].TotalCount(), c.total.h[m].TotalCount(), Metrics[m])
		require.Equal(t, want[m].Distribution(), c.total.h[m].Distribution(), Metrics[m])
		require.Equal(t, want[m].Min(), c.total.h[m].Min())
		require.Equal(t, want[m].Max(), c.total.h[m].Max())
		require.Equal(t, ValuesAtPercentiles(want[m], DefaultTestPercentiles), ValuesAtPercentiles(c.total.h[m], DefaultTestPercentiles))
		ops += want[m].TotalCount()
	}
	require.Equal(t, ops, c.total.acquired)
}

var DefaultTestPercentiles = []float64{0, 50, 90, 99, 99.9, 99.99, 100}

// memLog keeps each interval's histograms (copies) by metric.
type memLog struct {
	mu   sync.Mutex
	last map[string]*hdr.Histogram
	all  []*hdr.Histogram
}

func (l *memLog) Write(tag string, h *hdr.Histogram, from, to time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[string]*hdr.Histogram{}
	}
	cp := hdr.Import(h.Export())
	cp.SetTag(tag)
	l.last[metricOf(tag)] = cp
	l.all = append(l.all, cp)
	return nil
}

func metricOf(tag string) string {
	for i := len(tag) - 1; i >= 0; i-- {
		if tag[i] == '.' {
			return tag[i+1:]
		}
	}
	return tag
}

// Recording allocates nothing, flushes included.
func TestRecordZeroAllocs(t *testing.T) {
	ls := newLoadState(RunConfig{}, nil, []Worker{nullWorker{}})
	rec := ls.recs[0]
	i := 0
	allocs := testing.AllocsPerRun(5*recBufLen, func() {
		rec.mu.Lock()
		rec.record(i%NumMetrics, time.Duration(i)*time.Microsecond)
		rec.mu.Unlock()
		i++
	})
	require.Zero(t, allocs)
}

// sleepWorker's operations take about d; a few fail, a few are refused.
type sleepWorker struct {
	d time.Duration
	n atomic.Int64
}

func (w *sleepWorker) Acquire(context.Context, string) (bool, error) {
	time.Sleep(w.d)
	switch w.n.Add(1) % 50 {
	case 7:
		return false, nil
	case 13:
		return false, context.DeadlineExceeded
	}
	return true, nil
}
func (w *sleepWorker) Extend(context.Context) (bool, error) { return true, nil }
func (w *sleepWorker) Release(context.Context) error        { time.Sleep(w.d); return nil }
func (w *sleepWorker) NodeErrors() map[string]int64         { return nil }
func (w *sleepWorker) Close() error                         { return nil }

// Measure's totals, interval log and harness figures agree: every
// operation is in exactly one of acquire, not_acquired and failed, the
// interval log sums to the totals, and the harness's CPU is reported.
func TestMeasureTotalsLogAndHarness(t *testing.T) {
	ws := make([]Worker, 16)
	for i := range ws {
		ws[i] = &sleepWorker{d: 200 * time.Microsecond}
	}
	log := &memLog{}
	var progress []Progress
	cfg := RunConfig{Workers: len(ws), Duration: 1200 * time.Millisecond, Interval: 300 * time.Millisecond, Keys: 64, Workload: WorkloadAcquireRelease}
	r, err := Measure(context.Background(), "s", ws, cfg, log, func(p Progress) { progress = append(progress, p) })
	require.NoError(t, err)
	require.Positive(t, r.Ops)
	h := r.Hists
	require.Equal(t, r.Ops, h[MAcquire].TotalCount()+h[MNotAcquired].TotalCount()+h[MFailed].TotalCount())
	require.Equal(t, r.Acquired, h[MAcquire].TotalCount())
	require.Equal(t, r.Acquired, h[MRelease].TotalCount())
	require.Equal(t, r.Acquired, h[MAcquireRelease].TotalCount())
	require.Positive(t, r.NotAcquired)
	require.Positive(t, r.Failed)
	sum := map[string]*hdr.Histogram{}
	for _, lh := range log.all {
		m := metricOf(lh.Tag())
		if sum[m] == nil {
			sum[m] = NewHistogram()
		}
		sum[m].Merge(lh)
	}
	for i, m := range Metrics {
		require.NotNil(t, sum[m], m)
		require.Equal(t, h[i].Distribution(), sum[m].Distribution(), m)
	}
	require.NotEmpty(t, progress)
	require.Positive(t, r.LoopNsPerOp)
	require.GreaterOrEqual(t, r.CollectNs, int64(0))
	require.Equal(t, r.CollectNs+int64(r.LoopNsPerOp*float64(r.Ops)), r.HarnessNs)
}

// The calibration measures the loop's own cost without running holds
// (a 1s hold would make it take 5000s).
func TestCalibrate(t *testing.T) {
	keys := keyNames("k", 16)
	for _, wl := range []string{WorkloadAcquireRelease, WorkloadAcquireExtendRelease} {
		ns := calibrate(RunConfig{Workload: wl, Keys: 16, Hold: Hold{Kind: "fixed", A: time.Second}}, keys)
		require.Positive(t, ns, wl)
		t.Logf("%s: the load loop's own CPU per operation %.0f ns", wl, ns)
	}
}
