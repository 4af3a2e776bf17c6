package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Workloads.
const (
	WorkloadAcquireRelease       = "acquire-release"
	WorkloadAcquireExtendRelease = "acquire-extend-release"
	WorkloadContended            = "contended"
)

// RunConfig is the load shape of one strategy's run.
type RunConfig struct {
	Workers  int           // concurrent workers (closed loop: each as fast as it goes)
	Duration time.Duration // measured duration (when Ops is 0)
	Ops      int64         // measured operations (when > 0, instead of Duration)
	Warmup   time.Duration // unrecorded closed-loop run first
	Rate     float64       // open loop: target ops/s over all workers; 0 = closed loop
	Keys     int           // key space size
	Workload string
	Interval time.Duration // histogram log / progress interval; default 1s
	Prefix   string        // key prefix, unique per run

	// BeforeMeasure and AfterMeasure, when set, run just before the
	// measured phase starts (after warm-up) and just after it ends (server
	// counters are read there).
	BeforeMeasure, AfterMeasure func()
}

// Progress is a live snapshot, sent once per interval.
type Progress struct {
	Strategy string
	Elapsed  time.Duration
	OpsPerS  float64 // over the last interval
	Ops      int64
	Errors   int64
	P99Us    float64 // acquire+release p99 so far (acquire when nothing was acquired)
}

// StrategyResult is one strategy's measured outcome (the JSON schema's
// "strategies" element).
type StrategyResult struct {
	Name           string           `json:"name"`
	Ops            int64            `json:"ops"`
	OpsPerSec      float64          `json:"ops_per_sec"`
	DurationS      float64          `json:"duration_s"`
	Acquire        Latency          `json:"acquire"`
	Release        Latency          `json:"release"`
	AcquireRelease Latency          `json:"acquire_release"`
	Errors         map[string]int64 `json:"errors"`
	NodeErrors     map[string]int64 `json:"node_errors"`
	Acquired       int64            `json:"acquired"`
	NotAcquired    int64            `json:"not_acquired"`
	Extended       int64            `json:"extended,omitempty"`
	NotExtended    int64            `json:"not_extended,omitempty"`
	AllocsPerOp    float64          `json:"allocs_per_op"`
	BytesPerOp     float64          `json:"bytes_per_op"`
	CPUUsPerOp     float64          `json:"cpu_us_per_op"`
	Server         *ServerCost      `json:"server,omitempty"`

	hists histSet
}

// keyNames pre-builds the key strings so the hot loop does not allocate.
func keyNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

type loadState struct {
	cfg     RunConfig
	keys    []string
	next    atomic.Int64 // global op counter (open loop, -n)
	stop    atomic.Bool
	start   time.Time
	end     time.Time
	period  time.Duration
	workers []Worker
	recs    []*workerRec
}

// runStrategy creates the workers, warms up, then measures. Interval
// histograms go to hlog (when not nil) tagged "<strategy>.<metric>", and a
// Progress snapshot to progress (when not nil) once per interval.
func runStrategy(ctx context.Context, s Strategy, cfg RunConfig, hlog *HlogWriter, progress func(Progress)) (*StrategyResult, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	workers := make([]Worker, 0, cfg.Workers)
	defer func() {
		for _, w := range workers {
			_ = w.Close()
		}
	}()
	for i := 0; i < cfg.Workers; i++ {
		w, err := s.NewWorker(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: worker %d: %w", s.Name(), i, err)
		}
		workers = append(workers, w)
	}
	keys := keyNames(cfg.Prefix+s.Name()+":", cfg.Keys)

	if cfg.Warmup > 0 {
		wcfg := cfg
		wcfg.Rate, wcfg.Ops, wcfg.Duration = 0, 0, cfg.Warmup
		ls := newLoadState(wcfg, keys, workers)
		ls.launch(ctx).Wait()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ls := newLoadState(cfg, keys, workers)
	total := newIntervalAgg()
	interval := newIntervalAgg()

	if cfg.BeforeMeasure != nil {
		cfg.BeforeMeasure()
	}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	cpu0, cpuOK := processCPU()

	wg := ls.launch(ctx)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	last := ls.start
	// The collector's own allocations (encoding the interval log allocates
	// thousands of objects per interval) are measured and left out of the
	// per-operation figure.
	var exMallocs, exBytes uint64
	var cm0, cm1 runtime.MemStats
	collect := func(now time.Time) error {
		runtime.ReadMemStats(&cm0)
		defer func() {
			runtime.ReadMemStats(&cm1)
			exMallocs += cm1.Mallocs - cm0.Mallocs
			exBytes += cm1.TotalAlloc - cm0.TotalAlloc
		}()
		for _, r := range ls.recs {
			r.drainInto(interval)
		}
		var err error
		if hlog != nil && interval.ops() > 0 {
			for i, m := range Metrics {
				if e := hlog.Write(s.Name()+"."+m, interval.h[i], last, now); e != nil && err == nil {
					err = e
				}
			}
		}
		total.add(interval)
		if progress != nil {
			p := Progress{Strategy: s.Name(), Elapsed: now.Sub(ls.start), Ops: total.ops(), Errors: total.errCount()}
			if d := now.Sub(last).Seconds(); d > 0 {
				p.OpsPerS = float64(interval.ops()) / d
			}
			h := total.h[2]
			if h.TotalCount() == 0 {
				h = total.h[0]
			}
			p.P99Us = us(h.ValueAtQuantile(99))
			progress(p)
		}
		interval.reset()
		last = now
		return err
	}
	var hlogErr error
	for running := true; running; {
		select {
		case <-done:
			running = false
		case now := <-tick.C:
			if err := collect(now); err != nil && hlogErr == nil {
				hlogErr = err
			}
		case <-ctx.Done():
			ls.stop.Store(true)
		}
	}
	endT := time.Now()
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&ms1)
	if cfg.AfterMeasure != nil {
		cfg.AfterMeasure()
	}
	if err := collect(endT); err != nil && hlogErr == nil {
		hlogErr = err
	}
	// The final collect ran after ms1 was read: it is not in the window.
	exMallocs -= cm1.Mallocs - cm0.Mallocs
	exBytes -= cm1.TotalAlloc - cm0.TotalAlloc
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if hlogErr != nil {
		return nil, fmt.Errorf("writing histogram log: %w", hlogErr)
	}

	elapsed := endT.Sub(ls.start)
	res := &StrategyResult{
		Name: s.Name(), Ops: total.ops(), DurationS: elapsed.Seconds(),
		Acquire: Summarize(total.h[0]), Release: Summarize(total.h[1]), AcquireRelease: Summarize(total.h[2]),
		Errors: map[string]int64{}, NodeErrors: map[string]int64{},
		Acquired: total.acquired, NotAcquired: total.notAcq, Extended: total.extended, NotExtended: total.notExt,
		hists: total.h,
	}
	for k, v := range total.errs {
		res.Errors[k] = v
	}
	for _, w := range workers {
		for k, v := range w.NodeErrors() {
			res.NodeErrors[k] += v
		}
	}
	if elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	}
	if res.Ops > 0 {
		res.AllocsPerOp = float64(max(0, int64(ms1.Mallocs-ms0.Mallocs)-int64(exMallocs))) / float64(res.Ops)
		res.BytesPerOp = float64(max(0, int64(ms1.TotalAlloc-ms0.TotalAlloc)-int64(exBytes))) / float64(res.Ops)
		if cpuOK {
			res.CPUUsPerOp = float64(cpu1-cpu0) / 1e3 / float64(res.Ops)
		}
	}
	return res, nil
}

func newLoadState(cfg RunConfig, keys []string, workers []Worker) *loadState {
	ls := &loadState{cfg: cfg, keys: keys, workers: workers, recs: make([]*workerRec, len(workers))}
	for i := range ls.recs {
		ls.recs[i] = newWorkerRec()
	}
	if cfg.Rate > 0 {
		ls.period = time.Duration(float64(time.Second) / cfg.Rate)
		if ls.period <= 0 {
			ls.period = 1
		}
	}
	return ls
}

// launch starts every worker's loop and returns their WaitGroup.
func (ls *loadState) launch(ctx context.Context) *sync.WaitGroup {
	ls.start = time.Now()
	if ls.cfg.Ops <= 0 {
		ls.end = ls.start.Add(ls.cfg.Duration)
	}
	var wg sync.WaitGroup
	for i := range ls.workers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ls.loop(ctx, i)
		}(i)
	}
	return &wg
}

// loop is one worker's load loop. Closed loop: the next operation starts
// when the previous one ends. Open loop: operation i is due at start +
// i*period; the worker sleeps until then if early, and its latency is
// measured from that intended start, so a stall delays (and is charged to)
// every operation scheduled during it (no coordinated omission).
func (ls *loadState) loop(ctx context.Context, wi int) {
	w, rec := ls.workers[wi], ls.recs[wi]
	n := len(ls.workers)
	nk := len(ls.keys)
	open := ls.period > 0
	var timer *time.Timer
	if open {
		timer = time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
	}
	for k := 0; ; k++ {
		if ls.stop.Load() || ctx.Err() != nil {
			return
		}
		var i int64
		if open || ls.cfg.Ops > 0 {
			i = ls.next.Add(1) - 1
			if ls.cfg.Ops > 0 && i >= ls.cfg.Ops {
				return
			}
		}
		var t0 time.Time
		var key string
		if open {
			t0 = ls.start.Add(time.Duration(i) * ls.period)
			if !ls.end.IsZero() && !t0.Before(ls.end) {
				return
			}
			if d := time.Until(t0); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return
				}
			}
			key = ls.keys[int(i%int64(nk))]
		} else {
			t0 = time.Now()
			if !ls.end.IsZero() && !t0.Before(ls.end) {
				return
			}
			key = ls.keys[keyIndex(wi, k, n, nk)]
		}
		ls.op(ctx, w, rec, key, t0)
	}
}

// keyIndex gives worker wi its k-th key: disjoint per-worker key sets when
// the key space holds at least one key per worker, else shared keys.
func keyIndex(wi, k, workers, keys int) int {
	if keys >= workers {
		per := keys / workers
		return wi + workers*(k%per)
	}
	return (wi + k) % keys
}

func (ls *loadState) op(ctx context.Context, w Worker, rec *workerRec, key string, t0 time.Time) {
	ok, err := w.Acquire(ctx, key)
	t1 := time.Now()
	rec.mu.Lock()
	if err != nil {
		rec.errs[classify(err)]++
		rec.mu.Unlock()
		return
	}
	record(rec.h[0], t1.Sub(t0))
	if !ok {
		rec.notAcq++
		rec.mu.Unlock()
		return
	}
	rec.acquired++
	rec.mu.Unlock()
	if ls.cfg.Workload == WorkloadAcquireExtendRelease {
		ext, err := w.Extend(ctx)
		rec.mu.Lock()
		switch {
		case err != nil:
			rec.errs["extend_"+classify(err)]++
		case ext:
			rec.extended++
		default:
			rec.notExt++
		}
		rec.mu.Unlock()
	}
	t2 := time.Now()
	err = w.Release(ctx)
	t3 := time.Now()
	rec.mu.Lock()
	if err != nil {
		rec.errs["release_"+classify(err)]++
	} else {
		record(rec.h[1], t3.Sub(t2))
		record(rec.h[2], t3.Sub(t0))
	}
	rec.mu.Unlock()
}
