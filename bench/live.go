package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redmux/redmux/bench/load"
)

// The live view (-metrics-addr): the run's counters and latency histograms
// in the Prometheus text exposition format (version 0.0.4), written by hand
// (no client library), served while the run goes. Every figure covers the
// measured phases only (warm-ups are not counted), summed over a strategy's
// phases, and is updated once a second by the collector: at the end
// of a strategy's phase its figures are the report's.

// liveBuckets are the histograms' upper bounds (seconds); +Inf follows.
var liveBuckets = liveBucketsArr[:]

var liveBucketsArr = [...]float64{
	50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10,
}

// liveView holds every strategy's live figures.
type liveView struct {
	mu    sync.Mutex
	order []string // strategies, in the order they started
	st    map[string]*liveStrategy
}

// liveStrategy is one strategy's figures: done, the finished phases'; the
// rest, the current phase's so far.
type liveStrategy struct {
	doneOps, doneFailed int64
	doneNodeErrs        map[string]int64
	ops, failed         int64
	nodeErrs            map[string]int64
	measuring           bool
	hists               [load.NumMetrics]liveHist // every phase's
}

// liveHist is a latency histogram in liveBuckets: counts per bucket (not
// cumulative; the last is +Inf), the sum (seconds) and the count. It is
// updated from each interval's HDR histogram by the collector, whose own
// allocations and CPU time are left out of the run's per-operation figures;
// a scrape only formats it.
type liveHist struct {
	counts [len(liveBucketsArr) + 1]int64
	sum    float64
	count  int64
}

// add adds h's values (nanoseconds), each in the first bucket whose bound
// is at least the lowest value equivalent to it: a value on a bound is in
// that bound's bucket; one just above it may be too (within the HDR
// histogram's 3 significant digits).
func (lh *liveHist) add(h *hdr.Histogram) {
	n := h.TotalCount()
	if n == 0 {
		return
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		sec := float64(bar.From) / 1e9
		j := sort.SearchFloat64s(liveBuckets, sec) // first bound >= sec; len: +Inf
		lh.counts[j] += bar.Count
	}
	lh.sum += h.Mean() * float64(n) / 1e9
	lh.count += n
}

func newLiveView() *liveView { return &liveView{st: map[string]*liveStrategy{}} }

// phase is the live view of one measured phase of strategy name on
// workers; next (may be nil) is the interval log it forwards to.
func (v *liveView) phase(name string, workers []load.Worker, next load.IntervalLog) *livePhase {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.st[name]
	if s == nil {
		s = &liveStrategy{doneNodeErrs: map[string]int64{}}
		v.st[name] = s
		v.order = append(v.order, name)
	}
	return &livePhase{v: v, s: s, workers: workers, next: next}
}

// livePhase feeds one measured phase into the view.
type livePhase struct {
	v        *liveView
	s        *liveStrategy
	workers  []load.Worker
	next     load.IntervalLog
	nodeErr0 map[string]int64 // the workers' node errors when the phase started
}

// liveNodeErrors sums the workers' node errors by kind, read while they run.
func liveNodeErrors(workers []load.Worker) map[string]int64 {
	m := map[string]int64{}
	for _, w := range workers {
		if c, ok := w.(nodeErrCounter); ok {
			for k, n := range c.nodeErrCounts().snapshot() {
				m[k] += n
			}
		}
	}
	return m
}

// begin starts the measured phase (load.RunConfig.BeforeMeasure).
func (p *livePhase) begin() {
	n0 := liveNodeErrors(p.workers)
	p.v.mu.Lock()
	p.nodeErr0 = n0
	p.s.measuring = true
	p.s.ops, p.s.failed, p.s.nodeErrs = 0, 0, nil
	p.v.mu.Unlock()
}

// progress takes the phase's figures so far (once per interval).
func (p *livePhase) progress(pr load.Progress) {
	n := liveNodeErrors(p.workers)
	for k, v := range p.nodeErr0 {
		if n[k] -= v; n[k] == 0 {
			delete(n, k)
		}
	}
	p.v.mu.Lock()
	p.s.ops, p.s.failed, p.s.nodeErrs = pr.Ops, pr.Errors, n
	p.v.mu.Unlock()
}

// Write merges an interval's histogram (tag <strategy>.<metric>) and
// forwards it.
func (p *livePhase) Write(tag string, h *hdr.Histogram, from, to time.Time) error {
	metric := tag[strings.LastIndexByte(tag, '.')+1:]
	p.v.mu.Lock()
	for i, m := range load.Metrics {
		if m == metric {
			p.s.hists[i].add(h)
		}
	}
	p.v.mu.Unlock()
	if p.next == nil {
		return nil
	}
	return p.next.Write(tag, h, from, to)
}

// end folds the finished phase's result (nil: nothing measured) into the
// strategy's totals.
func (p *livePhase) end(r *load.Result) {
	p.v.mu.Lock()
	defer p.v.mu.Unlock()
	s := p.s
	if r != nil {
		s.doneOps += r.Ops
		s.doneFailed += r.Failed
		for k, n := range r.NodeErrors {
			s.doneNodeErrs[k] += n
		}
	}
	s.ops, s.failed, s.nodeErrs, s.measuring = 0, 0, nil, false
}

// write writes the exposition.
func (v *liveView) write(w io.Writer) {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := &strings.Builder{}
	b.WriteString("# HELP redmux_bench_operations_total Measured lock operations (acquire attempts, each with its release), by strategy and outcome: ok (no error; acquired or held elsewhere) or failed (an error at acquire or release).\n")
	b.WriteString("# TYPE redmux_bench_operations_total counter\n")
	for _, name := range v.order {
		s := v.st[name]
		ops, failed := s.doneOps+s.ops, s.doneFailed+s.failed
		fmt.Fprintf(b, "redmux_bench_operations_total{strategy=%q,outcome=\"ok\"} %d\n", name, ops-failed)
		fmt.Fprintf(b, "redmux_bench_operations_total{strategy=%q,outcome=\"failed\"} %d\n", name, failed)
	}
	b.WriteString("# HELP redmux_bench_node_errors_total Node errors (one node's failed command) in measured operations, by strategy and kind, as the report's node_errors.\n")
	b.WriteString("# TYPE redmux_bench_node_errors_total counter\n")
	for _, name := range v.order {
		s := v.st[name]
		m := map[string]int64{}
		for k, n := range s.doneNodeErrs {
			m[k] += n
		}
		for k, n := range s.nodeErrs {
			m[k] += n
		}
		kinds := make([]string, 0, len(m))
		for k := range m {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(b, "redmux_bench_node_errors_total{strategy=%q,kind=%q} %d\n", name, k, m[k])
		}
	}
	b.WriteString("# HELP redmux_bench_measuring Whether the strategy's measured phase is running (1) or not (0).\n")
	b.WriteString("# TYPE redmux_bench_measuring gauge\n")
	for _, name := range v.order {
		m := 0
		if v.st[name].measuring {
			m = 1
		}
		fmt.Fprintf(b, "redmux_bench_measuring{strategy=%q} %d\n", name, m)
	}
	b.WriteString("# HELP redmux_bench_latency_seconds Measured latencies by strategy and metric (acquire, release, acquire_release, not_acquired, failed: the report's), bucket bounds within the HDR histograms' 3 significant digits.\n")
	b.WriteString("# TYPE redmux_bench_latency_seconds histogram\n")
	for _, name := range v.order {
		for i, metric := range load.Metrics {
			writeLiveHist(b, name, metric, &v.st[name].hists[i])
		}
	}
	_, _ = io.WriteString(w, b.String())
}

// writeLiveHist writes one histogram's buckets, sum and count.
func writeLiveHist(b *strings.Builder, name, metric string, h *liveHist) {
	var cum int64
	for j, le := range liveBuckets {
		cum += h.counts[j]
		fmt.Fprintf(b, "redmux_bench_latency_seconds_bucket{strategy=%q,metric=%q,le=%q} %d\n", name, metric, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	fmt.Fprintf(b, "redmux_bench_latency_seconds_bucket{strategy=%q,metric=%q,le=\"+Inf\"} %d\n", name, metric, h.count)
	fmt.Fprintf(b, "redmux_bench_latency_seconds_sum{strategy=%q,metric=%q} %s\n", name, metric, strconv.FormatFloat(h.sum, 'g', -1, 64))
	fmt.Fprintf(b, "redmux_bench_latency_seconds_count{strategy=%q,metric=%q} %d\n", name, metric, h.count)
}

// liveServer serves a liveView on a listener until stop.
type liveServer struct {
	v   *liveView
	ln  net.Listener
	srv *http.Server
	URL string // http://<the address listened on>/metrics
}

// startLive listens on addr (-metrics-addr) and serves the view at
// /metrics (and /).
func startLive(addr string) (*liveServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	ls := &liveServer{v: newLiveView(), ln: ln, URL: "http://" + ln.Addr().String() + "/metrics"}
	hm := http.NewServeMux()
	hm.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		ls.v.write(w)
	})
	ls.srv = &http.Server{Handler: hm, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := ls.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return ls, nil
}

// stop closes the listener and waits (a moment) for scrapes in flight;
// o.liveDone is called first.
func (ls *liveServer) stop(o Options) {
	if ls == nil {
		return
	}
	if o.liveDone != nil {
		o.liveDone(ls.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = ls.srv.Shutdown(ctx)
}

// startLiveFor starts cfg's live view (nil without -metrics-addr) and says
// where it is served.
func startLiveFor(cfg *Config, o Options) (*liveServer, error) {
	if cfg.MetricsAddr == "" {
		return nil, nil
	}
	ls, err := startLive(cfg.MetricsAddr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Stderr, "redmux-bench: live metrics (Prometheus text format) at %s while the run goes\n", ls.URL)
	if o.liveUp != nil {
		o.liveUp(ls.URL)
	}
	return ls, nil
}

// view is the view measured phases feed (nil: none).
func (ls *liveServer) view() *liveView {
	if ls == nil {
		return nil
	}
	return ls.v
}
