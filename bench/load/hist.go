package load

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry used everywhere: values are nanoseconds, from 1us
// (lowest discernible value) to 60s, with 3 significant digits. Nanoseconds
// are the unit standard HdrHistogram tools assume (HistogramLogProcessor
// prints milliseconds with its default output ratio of 1e6).
const (
	HistLowest  = int64(time.Microsecond)
	HistHighest = int64(60 * time.Second)
	HistDigits  = 3
)

// NewHistogram returns an empty histogram with the bench geometry.
func NewHistogram() *hdr.Histogram { return hdr.New(HistLowest, HistHighest, HistDigits) }

// record adds d to h, clamping to the trackable range so a value is never
// lost (a 2-minute stall is recorded as 60s, the histogram's ceiling).
func Record(h *hdr.Histogram, d time.Duration) {
	v := int64(d)
	if v < HistLowest {
		v = HistLowest
	} else if v > HistHighest {
		v = HistHighest
	}
	_ = h.RecordValue(v)
}

// Metric names: the latencies recorded per strategy. An operation is one
// acquire attempt (plus its release when acquired): exactly one of
// acquire, not_acquired and failed records it, so no operation, and none of
// the time lost in timeouts, drops out of the histograms.
const (
	MetricAcquire        = "acquire"         // acquire attempts that took the lock
	MetricRelease        = "release"         // releases that succeeded
	MetricAcquireRelease = "acquire_release" // acquire start to release end, when both succeeded
	MetricNotAcquired    = "not_acquired"    // attempts answered "held elsewhere" (no error)
	MetricFailed         = "failed"          // operations that ended in an error, at acquire or release: latency to the failure
)

// Metrics lists the recorded latencies in report order.
var Metrics = []string{MetricAcquire, MetricRelease, MetricAcquireRelease, MetricNotAcquired, MetricFailed}

// Indexes into Hists, in Metrics order.
const (
	MAcquire = iota
	MRelease
	MAcquireRelease
	MNotAcquired
	MFailed
	NumMetrics
)

// Hists is one histogram per metric.
type Hists [NumMetrics]*hdr.Histogram

func NewHists() Hists {
	var s Hists
	for i := range s {
		s[i] = NewHistogram()
	}
	return s
}

func (s Hists) merge(o Hists) {
	for i := range s {
		s[i].Merge(o[i])
	}
}

func (s Hists) reset() {
	for i := range s {
		s[i].Reset()
	}
}

// counts are an interval's (or the run's) outcome counters.
type counts struct {
	acquired  int64 // acquire attempts that took the lock
	notAcq    int64 // attempts refused (held elsewhere)
	failed    int64 // attempts that ended in an error
	relFailed int64 // releases that failed (their operation was acquired)
	extended  int64
	notExt    int64
	errs      map[string]int64
}

func (c *counts) add(o *counts) {
	c.acquired += o.acquired
	c.notAcq += o.notAcq
	c.failed += o.failed
	c.relFailed += o.relFailed
	c.extended += o.extended
	c.notExt += o.notExt
	for k, v := range o.errs {
		c.errs[k] += v
	}
}

func (c *counts) reset() {
	c.acquired, c.notAcq, c.failed, c.relFailed, c.extended, c.notExt = 0, 0, 0, 0, 0, 0
	clear(c.errs)
}

// ops is the number of completed operations: every acquire attempt,
// acquired, refused or failed.
func (c *counts) ops() int64 { return c.acquired + c.notAcq + c.failed }

// failedOps is the number of operations that ended in an error, at acquire
// or at release.
func (c *counts) failedOps() int64 { return c.failed + c.relFailed }

// Recording. Each worker appends its values to a small private buffer
// (recBufLen entries, 2 KiB) and, when it is full, flushes it into the
// load state's one shared set of interval histograms (sink) under the
// sink's mutex. Once per interval the collector flushes every worker's
// partial buffer, takes the sink's histograms whole (swapping in an empty
// set), logs them, and adds them to the run's totals: the per-interval
// work is one merge of NumMetrics histograms, not one per worker, and a
// worker keeps 2 KiB instead of NumMetrics histograms (147.5 KB each at
// this geometry). Every value lands in the same bucket as before, and
// percentiles, min, max and mean are computed from the buckets, so every
// figure is what per-worker histograms merged once per interval gave.
//
// A value flushed by a full buffer after the collector drained its worker
// but before it took the sink counts in the interval ending then (it was
// recorded before that end); a worker's partial buffer is drained at the
// interval's end as before. The totals hold every value either way.
const recBufLen = 256

// recValueBits is how many low bits of a buffered entry hold the value
// (nanoseconds, at most HistHighest < 2^36); the metric index is above.
const recValueBits = 56

// sink is the interval histograms that the workers' buffers flush into.
type sink struct {
	mu sync.Mutex
	h  Hists
}

func newSink() *sink { return &sink{h: NewHists()} }

// take swaps the sink's histograms for empty (reset) ones and returns
// what was recorded since the last take.
func (s *sink) take(empty Hists) Hists {
	s.mu.Lock()
	h := s.h
	s.h = empty
	s.mu.Unlock()
	return h
}

// workerRec is a worker's private interval recorder. The worker records
// under mu (uncontended except when the collector drains it once per
// interval).
type workerRec struct {
	mu sync.Mutex
	n  int // entries in buf
	// buf holds recorded values not yet in the sink: metric<<recValueBits
	// | nanoseconds (clamped to the histograms' range).
	buf  [recBufLen]uint64
	sink *sink
	counts
	// busyNs is the time the worker spent in operations (from their actual
	// start), for WorkerBusyShare.
	busyNs atomic.Int64
	// liveNs is how long the worker's load loop ran.
	liveNs atomic.Int64
}

func newWorkerRec(s *sink) *workerRec {
	return &workerRec{sink: s, counts: counts{errs: map[string]int64{}}}
}

// record adds d to metric m, clamped as Record clamps; the caller holds
// w.mu.
func (w *workerRec) record(m int, d time.Duration) {
	v := int64(d)
	if v < HistLowest {
		v = HistLowest
	} else if v > HistHighest {
		v = HistHighest
	}
	w.buf[w.n] = uint64(m)<<recValueBits | uint64(v)
	w.n++
	if w.n == recBufLen {
		w.flush()
	}
}

// flush moves the buffered values into the sink; the caller holds w.mu.
func (w *workerRec) flush() {
	if w.n == 0 {
		return
	}
	s := w.sink
	s.mu.Lock()
	for _, e := range w.buf[:w.n] {
		_ = s.h[e>>recValueBits].RecordValue(int64(e & (1<<recValueBits - 1)))
	}
	s.mu.Unlock()
	w.n = 0
}

// drainInto flushes the worker's buffered values into the sink and moves
// its interval counts into dst, resetting them.
func (w *workerRec) drainInto(dst *counts) {
	w.mu.Lock()
	w.flush()
	dst.add(&w.counts)
	w.counts.reset()
	w.mu.Unlock()
}

// intervalAgg is the sum of every worker's recorder over one interval (or,
// for the totals, over the whole measured run).
type intervalAgg struct {
	h Hists
	counts
}

func newIntervalAgg() *intervalAgg {
	return &intervalAgg{h: NewHists(), counts: counts{errs: map[string]int64{}}}
}

func (a *intervalAgg) add(o *intervalAgg) {
	a.h.merge(o.h)
	a.counts.add(&o.counts)
}

func (a *intervalAgg) reset() {
	a.h.reset()
	a.counts.reset()
}

// ValueAtPercentile returns the value at percentile p (0..100) of h with
// HdrHistogram's own convention, as the Java and JavaScript libraries and
// their tools (HistogramLogProcessor) compute it: the rank is
// ceil(p/100 * count) (with p lowered by one ulp first, so that 55% of 100
// values is rank 55, not 56), at least 1, and the value is the highest
// value equivalent to the recorded value at that rank (the lowest for
// p = 0). hdrhistogram-go rounds the rank instead, which gives other
// values at sparse tails; every figure bench reports uses this function.
// An empty histogram gives 0.
func ValueAtPercentile(h *hdr.Histogram, p float64) int64 {
	v := ValuesAtPercentiles(h, []float64{p})
	return v[0]
}

// ValuesAtPercentiles is ValueAtPercentile for several percentiles in one
// pass over h.
func ValuesAtPercentiles(h *hdr.Histogram, ps []float64) []int64 {
	out := make([]int64, len(ps))
	total := h.TotalCount()
	if total == 0 {
		return out
	}
	ranks := make([]int64, len(ps))
	for i, p := range ps {
		q := math.Min(math.Max(math.Nextafter(p, math.Inf(-1)), 0), 100)
		r := int64(math.Ceil(q / 100 * float64(total)))
		ranks[i] = min(max(r, 1), total)
	}
	var cum int64
	done := 0
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		for i, r := range ranks {
			if out[i] == 0 && cum >= r {
				if ps[i] <= 0 {
					out[i] = b.From
				} else {
					out[i] = b.To
				}
				done++
			}
		}
		if done == len(ps) {
			break
		}
	}
	return out
}

func us(ns int64) float64 { return float64(ns) / 1e3 }
