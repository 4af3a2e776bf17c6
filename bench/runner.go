package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	// WorkloadFenced is acquire-release with a fencing token
	// (redlock.WithFencing): acquire, write the token to a fenced counter
	// (an in-process store that refuses a token lower than the highest it
	// has seen for the key: a stale one is counted as "fenced_stale" among
	// the node errors, and must stay 0), release. mux strategy only: seq
	// and fanout have no fencing.
	WorkloadFenced = "fenced"
)

// RunConfig is the load shape of one strategy's run.
type RunConfig struct {
	Workers  int           // concurrent workers (closed loop: each as fast as it goes)
	Duration time.Duration // measured duration (when Ops is 0)
	Ops      int64         // measured operations (when > 0, instead of Duration)
	Warmup   time.Duration // unrecorded run first (closed loop unless WarmupRate)
	// WarmupRate, when > 0, runs the warm-up open loop at this rate (a
	// sweep step settles at its own rate).
	WarmupRate float64
	Rate       float64 // open loop: target ops/s over all workers; 0 = closed loop
	Keys       int     // key space size
	Workload   string
	// Hold is the time each acquired lock is held before its release
	// (-hold); it is part of the acquire_release latency.
	Hold Hold
	// KeyDist is the key popularity (-keys-dist); zero: round-robin.
	KeyDist  KeyDist
	Interval time.Duration // histogram log / progress interval; default 1s
	// StartAt, when set, is when the warm-up starts (-start-at): measure
	// waits for it, or starts at once and reports how late it was.
	StartAt time.Time
	// Tag prefixes the interval log's tags ("<Tag>.<metric>"); default the
	// strategy's name.
	Tag    string
	Prefix string // key prefix, unique per run
	// Percentiles are reported in each Latency's Percentiles (optional).
	Percentiles []float64

	// BeforeMeasure and AfterMeasure, when set, run just before the
	// measured phase starts (after warm-up) and just after it ends (server
	// counters are read there).
	BeforeMeasure, AfterMeasure func()
}

// Progress is a live snapshot, sent once per interval.
type Progress struct {
	Strategy string
	Elapsed  time.Duration // since the measured phase started
	OpsPerS  float64       // over the last interval
	Ops      int64
	// Duration and Target are the measured phase's planned length: a
	// duration (-d), or a number of operations (-n) with Duration 0.
	Duration time.Duration
	Target   int64
	Errors   int64   // failed operations so far
	P99Us    float64 // acquire+release p99 so far (else acquire's, not acquired's, failed's)
	Backlog  int64   // open loop: operations due but not started
}

// Saturation threshold of an open-loop run: the run is saturated when the
// achieved rate is below this share of the target.
const SaturationShare = 0.97

// FailedShare is the share of operations that failed.
func (s *StrategyResult) FailedShare() float64 {
	if s.Ops == 0 {
		return 0
	}
	return float64(s.Failed) / float64(s.Ops)
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
	cfg      RunConfig
	keys     []string
	next     atomic.Int64 // global op counter (open loop, -n)
	stopped  atomic.Bool
	stopOnce sync.Once
	stopCh   chan struct{}
	start    time.Time
	end      time.Time
	period   time.Duration
	workers  []Worker
	recs     []*workerRec
}

func (ls *loadState) stop() {
	ls.stopOnce.Do(func() {
		ls.stopped.Store(true)
		close(ls.stopCh)
	})
}

// due is the number of open-loop operations due by now.
func (ls *loadState) due(now time.Time) int64 {
	if ls.period <= 0 {
		return 0
	}
	if !ls.end.IsZero() && now.After(ls.end) {
		now = ls.end
	}
	n := int64(now.Sub(ls.start)/ls.period) + 1
	if ls.cfg.Ops > 0 {
		n = min(n, ls.cfg.Ops)
	}
	return max(n, 0)
}

// backlog is the open-loop operations due by now that no worker has
// started.
func (ls *loadState) backlog(now time.Time) int64 {
	if ls.period <= 0 {
		return 0
	}
	return max(0, ls.due(now)-ls.next.Load())
}

// runStrategy creates the workers, warms up, then measures. Interval
// histograms go to hlog (when not nil) tagged "<strategy>.<metric>", and a
// Progress snapshot to progress (when not nil) once per interval.
//
// When ctx is cancelled (SIGINT) during the measured phase, no new
// operation starts, those in flight finish (bounded by the node timeout; they
// are not cancelled, so they are not miscounted as failures), and the result
// covers what was measured, marked Interrupted, with ctx's error. Cancelled
// before anything was measured, it returns only the error.
func runStrategy(ctx context.Context, s Strategy, cfg RunConfig, hlog *HlogWriter, progress func(Progress)) (*StrategyResult, error) {
	workers, err := newWorkers(ctx, s, cfg.Workers)
	defer closeWorkers(workers)
	if err != nil {
		return nil, err
	}
	return measure(ctx, s, workers, cfg, hlog, progress)
}

// newWorkers makes n workers of s; on error, those made so far are
// returned with it (for closeWorkers).
func newWorkers(ctx context.Context, s Strategy, n int) ([]Worker, error) {
	workers := make([]Worker, 0, n)
	for i := 0; i < n; i++ {
		w, err := s.NewWorker(ctx)
		if err != nil {
			return workers, fmt.Errorf("%s: worker %d: %w", s.Name(), i, err)
		}
		workers = append(workers, w)
	}
	return workers, nil
}

func closeWorkers(workers []Worker) {
	for _, w := range workers {
		_ = w.Close()
	}
}

// measure runs one warm-up and one measured phase on existing workers (a
// sweep runs many on the same workers). Node errors are those of this
// phase only.
func measure(ctx context.Context, s Strategy, workers []Worker, cfg RunConfig, hlog *HlogWriter, progress func(Progress)) (*StrategyResult, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	tag := cfg.Tag
	if tag == "" {
		tag = s.Name()
	}
	// Operations run on a context without ctx's cancellation: a stop lets
	// them finish instead of failing them.
	opCtx := context.WithoutCancel(ctx)
	keys := keyNames(cfg.Prefix+s.Name()+":", cfg.Keys)

	var late time.Duration
	if !cfg.StartAt.IsZero() {
		if d := time.Until(cfg.StartAt); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		} else {
			late = -d
		}
	}
	if cfg.Warmup > 0 {
		wcfg := cfg
		wcfg.Rate, wcfg.Ops, wcfg.Duration = cfg.WarmupRate, 0, cfg.Warmup
		ls := newLoadState(wcfg, keys, workers)
		wg := ls.launch(opCtx)
		stopOnCancel(ctx, ls, wg)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	nodeErrs0 := map[string]int64{}
	for _, w := range workers {
		for k, v := range w.NodeErrors() {
			nodeErrs0[k] += v
		}
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

	wg := ls.launch(opCtx)
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
		if hlog != nil {
			// Every non-empty histogram is logged, so the log holds every
			// recorded value (a release may land in an interval without
			// acquires).
			for i, m := range Metrics {
				if interval.h[i].TotalCount() == 0 {
					continue
				}
				if e := hlog.Write(tag+"."+m, interval.h[i], last, now); e != nil && err == nil {
					err = e
				}
			}
		}
		total.add(interval)
		if progress != nil {
			p := Progress{Strategy: s.Name(), Elapsed: now.Sub(ls.start), Ops: total.ops(), Errors: total.failedOps(), Backlog: ls.backlog(now),
				Duration: cfg.Duration, Target: cfg.Ops}
			if cfg.Ops > 0 {
				p.Duration = 0
			}
			if d := now.Sub(last).Seconds(); d > 0 {
				p.OpsPerS = float64(interval.ops()) / d
			}
			for _, i := range []int{mAcquireRelease, mAcquire, mNotAcquired, mFailed} {
				if h := total.h[i]; h.TotalCount() > 0 {
					p.P99Us = us(ValueAtPercentile(h, 99))
					break
				}
			}
			progress(p)
		}
		interval.reset()
		last = now
		return err
	}
	var hlogErr error
	interrupted := false
	for running := true; running; {
		select {
		case <-done:
			running = false
		case now := <-tick.C:
			if err := collect(now); err != nil && hlogErr == nil {
				hlogErr = err
			}
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				ls.stop()
			}
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
	if hlogErr != nil {
		return nil, fmt.Errorf("writing histogram log: %w", hlogErr)
	}
	if interrupted && total.ops() == 0 {
		return nil, ctx.Err()
	}

	elapsed := endT.Sub(ls.start)
	pc := cfg.Percentiles
	res := &StrategyResult{
		Name: s.Name(), Ops: total.ops(), DurationS: elapsed.Seconds(), Interrupted: interrupted,
		Acquire: Summarize(total.h[mAcquire], pc...), Release: Summarize(total.h[mRelease], pc...),
		AcquireRelease: Summarize(total.h[mAcquireRelease], pc...),
		NotAcquiredLat: Summarize(total.h[mNotAcquired], pc...), FailedLat: Summarize(total.h[mFailed], pc...),
		Errors: map[string]int64{}, NodeErrors: map[string]int64{},
		Acquired: total.acquired, NotAcquired: total.notAcq, Failed: total.failedOps(), ReleaseFailed: total.relFailed,
		Extended: total.extended, NotExtended: total.notExt,
		hists: total.h,
	}
	if !cfg.StartAt.IsZero() {
		res.StartedAt = ls.start.UTC().Format(time.RFC3339Nano)
		res.StartLateMs = float64(late) / 1e6
	}
	for k, v := range total.errs {
		res.Errors[k] = v
	}
	for _, w := range workers {
		for k, v := range w.NodeErrors() {
			res.NodeErrors[k] += v
		}
	}
	for k, v := range nodeErrs0 {
		if res.NodeErrors[k] -= v; res.NodeErrors[k] == 0 {
			delete(res.NodeErrors, k)
		}
	}
	window := elapsed
	if cfg.Rate > 0 && cfg.Ops <= 0 && !interrupted {
		// Open loop: operations start within [start, start+Duration) and
		// every one started is counted when it ends, so the achieved rate
		// is over that window. Over the elapsed time, which includes the
		// last operations' latency, a short step at high latency would look
		// saturated when it kept up.
		window = cfg.Duration
	}
	if window > 0 {
		res.OpsPerSec = float64(res.Ops) / window.Seconds()
		res.AcquiredPerSec = float64(res.Acquired) / window.Seconds()
	}
	if cfg.Rate > 0 {
		res.TargetRate = cfg.Rate
		res.Backlog = ls.backlog(endT)
		checkSaturation(res, ls.due(endT), cfg.Workers)
	}
	if elapsed > 0 && len(workers) > 0 {
		// Over each worker's running time: a worker with nothing left to
		// start leaves at the end while others finish their last operation.
		var busy, live int64
		for _, r := range ls.recs {
			busy += r.busyNs.Load()
			live += r.liveNs.Load()
		}
		if live > 0 {
			res.WorkerBusyShare = min(1, float64(busy)/float64(live))
		}
		if ops := total.ops(); ops > 0 {
			res.MeanServiceUs = float64(busy) / 1e3 / float64(ops)
		}
	}
	if res.Ops > 0 {
		res.AllocsPerOp = float64(max(0, int64(ms1.Mallocs-ms0.Mallocs)-int64(exMallocs))) / float64(res.Ops)
		res.BytesPerOp = float64(max(0, int64(ms1.TotalAlloc-ms0.TotalAlloc)-int64(exBytes))) / float64(res.Ops)
		if cpuOK {
			res.CPUUsPerOp = float64(cpu1-cpu0) / 1e3 / float64(res.Ops)
		}
	}
	if interrupted {
		return res, ctx.Err()
	}
	return res, nil
}

// stopOnCancel waits for wg, stopping ls if ctx is cancelled first.
func stopOnCancel(ctx context.Context, ls *loadState, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		ls.stop()
		<-done
	}
}

// checkSaturation marks an open-loop result saturated when it did not keep
// up with its target: the achieved rate is below SaturationShare of the
// target, or operations due were left unstarted at the end (the backlog grew
// beyond what the workers had in hand).
func checkSaturation(res *StrategyResult, due int64, workers int) {
	switch {
	case res.OpsPerSec < SaturationShare*res.TargetRate:
		res.Saturated = true
		res.Saturation = fmt.Sprintf("achieved %s of the %s ops/s target (%.0f%%)",
			fmtCount(res.OpsPerSec), fmtCount(res.TargetRate), 100*res.OpsPerSec/res.TargetRate)
	case res.Backlog > max(int64(workers), due/100):
		res.Saturated = true
		res.Saturation = fmt.Sprintf("%d of %d operations due were never started (the backlog grew)", res.Backlog, due)
	}
}

func newLoadState(cfg RunConfig, keys []string, workers []Worker) *loadState {
	ls := &loadState{cfg: cfg, keys: keys, workers: workers, recs: make([]*workerRec, len(workers)), stopCh: make(chan struct{})}
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
// every operation scheduled during it (no coordinated omission). A timed
// open-loop run stops at its end: operations due but not started by then
// are the backlog (reported, and a sign of saturation), so an overloaded
// run does not run on for its whole queue.
func (ls *loadState) loop(ctx context.Context, wi int) {
	w, rec := ls.workers[wi], ls.recs[wi]
	n := len(ls.workers)
	open := ls.period > 0
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(wi)))
	keys := newKeyPicker(ls.cfg.KeyDist, len(ls.keys), rng)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	defer func() { rec.liveNs.Store(int64(time.Since(ls.start))) }()
	for k := 0; ; k++ {
		if ls.stopped.Load() {
			return
		}
		if open && !ls.end.IsZero() && !time.Now().Before(ls.end) {
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
		if open {
			t0 = ls.start.Add(time.Duration(i) * ls.period)
			if !ls.end.IsZero() && !t0.Before(ls.end) {
				return
			}
			if d := time.Until(t0); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-ls.stopCh:
					return
				}
			}
		} else {
			t0 = time.Now()
			if !ls.end.IsZero() && !t0.Before(ls.end) {
				return
			}
		}
		key := ls.keys[keys.pick(wi, k, n, i, open)]
		var hold time.Duration
		if ls.cfg.Hold.Kind != "" {
			hold = ls.cfg.Hold.draw(rng)
		}
		began := time.Now()
		ls.op(ctx, w, rec, key, t0, hold, timer)
		rec.busyNs.Add(int64(time.Since(began)))
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

// op runs one operation: acquire, and when acquired the extension
// (acquire-extend-release), the hold (on timer, stopped and drained) and the
// release.
func (ls *loadState) op(ctx context.Context, w Worker, rec *workerRec, key string, t0 time.Time, hold time.Duration, timer *time.Timer) {
	ok, err := w.Acquire(ctx, key)
	t1 := time.Now()
	rec.mu.Lock()
	switch {
	case err != nil:
		rec.errs[classify(err)]++
		rec.failed++
		record(rec.h[mFailed], t1.Sub(t0))
		rec.mu.Unlock()
		return
	case !ok:
		rec.notAcq++
		record(rec.h[mNotAcquired], t1.Sub(t0))
		rec.mu.Unlock()
		return
	}
	rec.acquired++
	record(rec.h[mAcquire], t1.Sub(t0))
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
	if hold > 0 {
		// Held to its end even when the run is stopped: a hold is bounded
		// (-hold), and cutting it would skew the last operations.
		timer.Reset(hold)
		<-timer.C
	}
	t2 := time.Now()
	err = w.Release(ctx)
	t3 := time.Now()
	rec.mu.Lock()
	if err != nil {
		rec.errs["release_"+classify(err)]++
		rec.relFailed++
		record(rec.h[mFailed], t3.Sub(t0))
	} else {
		record(rec.h[mRelease], t3.Sub(t2))
		record(rec.h[mAcquireRelease], t3.Sub(t0))
	}
	rec.mu.Unlock()
}
