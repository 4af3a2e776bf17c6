package bench

import (
	"sync"
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
func record(h *hdr.Histogram, d time.Duration) {
	v := int64(d)
	if v < HistLowest {
		v = HistLowest
	} else if v > HistHighest {
		v = HistHighest
	}
	_ = h.RecordValue(v)
}

// Metric names: the three latencies recorded per strategy.
const (
	MetricAcquire        = "acquire"
	MetricRelease        = "release"
	MetricAcquireRelease = "acquire_release"
)

// Metrics lists the recorded latencies in report order.
var Metrics = []string{MetricAcquire, MetricRelease, MetricAcquireRelease}

// histSet is one histogram per metric.
type histSet [3]*hdr.Histogram

func newHistSet() histSet { return histSet{NewHistogram(), NewHistogram(), NewHistogram()} }

func (s histSet) merge(o histSet) {
	for i := range s {
		s[i].Merge(o[i])
	}
}

func (s histSet) reset() {
	for i := range s {
		s[i].Reset()
	}
}

// workerRec is a worker's private interval recorder. The worker records under
// mu (uncontended except when the collector drains it once per interval).
type workerRec struct {
	mu       sync.Mutex
	h        histSet
	acquired int64
	notAcq   int64
	extended int64
	notExt   int64
	errs     map[string]int64
}

func newWorkerRec() *workerRec { return &workerRec{h: newHistSet(), errs: map[string]int64{}} }

// drainInto moves the worker's interval counts into dst and resets them.
func (w *workerRec) drainInto(dst *intervalAgg) {
	w.mu.Lock()
	dst.h.merge(w.h)
	w.h.reset()
	dst.acquired += w.acquired
	dst.notAcq += w.notAcq
	dst.extended += w.extended
	dst.notExt += w.notExt
	for k, v := range w.errs {
		dst.errs[k] += v
		delete(w.errs, k)
	}
	w.acquired, w.notAcq, w.extended, w.notExt = 0, 0, 0, 0
	w.mu.Unlock()
}

// intervalAgg is the sum of every worker's recorder over one interval (or,
// for the totals, over the whole measured run).
type intervalAgg struct {
	h        histSet
	acquired int64
	notAcq   int64
	extended int64
	notExt   int64
	errs     map[string]int64
}

func newIntervalAgg() *intervalAgg { return &intervalAgg{h: newHistSet(), errs: map[string]int64{}} }

func (a *intervalAgg) add(o *intervalAgg) {
	a.h.merge(o.h)
	a.acquired += o.acquired
	a.notAcq += o.notAcq
	a.extended += o.extended
	a.notExt += o.notExt
	for k, v := range o.errs {
		a.errs[k] += v
	}
}

func (a *intervalAgg) reset() {
	a.h.reset()
	a.acquired, a.notAcq, a.extended, a.notExt = 0, 0, 0, 0
	clear(a.errs)
}

func (a *intervalAgg) errCount() int64 {
	var n int64
	for _, v := range a.errs {
		n += v
	}
	return n
}

// ops is the number of completed operations: every acquire attempt that got
// an answer (acquired or not) plus every failed one.
func (a *intervalAgg) ops() int64 { return a.acquired + a.notAcq + a.errCount() }

// Latency is a latency distribution summary in microseconds.
type Latency struct {
	Count   int64   `json:"count"`
	MinUs   float64 `json:"min_us"`
	MeanUs  float64 `json:"mean_us"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p999_us"`
	P9999Us float64 `json:"p9999_us"`
	MaxUs   float64 `json:"max_us"`
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// Summarize returns the percentiles of h (nanosecond values) in microseconds.
// An empty histogram gives a zero Latency.
func Summarize(h *hdr.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count:   h.TotalCount(),
		MinUs:   us(h.Min()),
		MeanUs:  h.Mean() / 1e3,
		P50Us:   us(h.ValueAtQuantile(50)),
		P90Us:   us(h.ValueAtQuantile(90)),
		P99Us:   us(h.ValueAtQuantile(99)),
		P999Us:  us(h.ValueAtQuantile(99.9)),
		P9999Us: us(h.ValueAtQuantile(99.99)),
		MaxUs:   us(h.Max()),
	}
}
