package load

import (
	"math/rand/v2"
	"testing"
	"time"
)

// benchValues are latencies like those of redmux-bench -c 256 on the
// embedded fake: exponential around 3ms, from 50us.
func benchValues(n int) []time.Duration {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = 50*time.Microsecond + time.Duration(r.ExpFloat64()*3e6)
	}
	return out
}

// BenchmarkRecord is one worker's recording path per value: the recorder's
// lock, the value into its buffer, and the buffer's flushes into the
// interval histograms (amortized).
func BenchmarkRecord(b *testing.B) {
	ls := newLoadState(RunConfig{}, nil, []Worker{nullWorker{}})
	rec := ls.recs[0]
	vals := benchValues(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.mu.Lock()
		rec.record(i%NumMetrics, vals[i&4095])
		rec.mu.Unlock()
	}
}

// BenchmarkInterval256 is one interval of a 256-worker run (-c 256 at
// about 50k pairs/s: 190 operations, 570 values, per worker per second):
// every worker records its values, then the collector ends the interval
// (no interval log, no progress). collect-ns/op is the collector's part,
// ns/value the recording's.
func BenchmarkInterval256(b *testing.B) {
	const workers, perWorker = 256, 570
	ws := make([]Worker, workers)
	for i := range ws {
		ws[i] = nullWorker{}
	}
	ls := newLoadState(RunConfig{Interval: time.Second}, nil, ws)
	c := newCollector(ls, "bench", "bench", nil, nil)
	vals := benchValues(perWorker * workers)
	now := time.Now()
	c.last = now
	b.ReportAllocs()
	b.ResetTimer()
	var collectNs, recordNs int64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for wi, rec := range ls.recs {
			rec.mu.Lock()
			for k, v := range vals[wi*perWorker : (wi+1)*perWorker] {
				rec.record(k%3, v)
			}
			rec.mu.Unlock()
		}
		t1 := time.Now()
		now = now.Add(time.Second)
		c.collect(now)
		collectNs += int64(time.Since(t1))
		recordNs += int64(t1.Sub(t0))
	}
	b.ReportMetric(float64(collectNs)/float64(b.N), "collect-ns/op")
	b.ReportMetric(float64(recordNs)/float64(b.N*workers*perWorker), "ns/value")
}
