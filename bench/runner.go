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
	late, err := waitStart(ctx, cfg.StartAt)
	if err != nil {
		return nil, err
	}
	warmUp(ctx, opCtx, cfg, keys, workers)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	nodeErrs0 := nodeErrors(workers)
	ls := newLoadState(cfg, keys, workers)
	c := newCollector(ls, s.Name(), tag, hlog, progress)

	if cfg.BeforeMeasure != nil {
		cfg.BeforeMeasure()
	}
	var acct accounting
	acct.begin()
	interrupted := c.run(ctx, ls.launch(opCtx))
	endT := time.Now()
	acct.end()
	if cfg.AfterMeasure != nil {
		cfg.AfterMeasure()
	}
	c.final(endT)
	if c.err != nil {
		return nil, fmt.Errorf("writing histogram log: %w", c.err)
	}
	if interrupted && c.total.ops() == 0 {
		return nil, ctx.Err()
	}
	o := ls.outcome(endT, c, &acct)
	o.late, o.interrupted = late, interrupted
	o.nodeErrs = nodeErrors(workers)
	for k, v := range nodeErrs0 {
		if o.nodeErrs[k] -= v; o.nodeErrs[k] == 0 {
			delete(o.nodeErrs, k)
		}
	}
	res := strategyResult(s.Name(), cfg, o)
	if interrupted {
		return res, ctx.Err()
	}
	return res, nil
}

// waitStart waits for at (-start-at) unless it is zero or past; past, it
// returns how late the start is. Cancelled while waiting, it returns ctx's
// error.
func waitStart(ctx context.Context, at time.Time) (late time.Duration, err error) {
	if at.IsZero() {
		return 0, nil
	}
	d := time.Until(at)
	if d <= 0 {
		return -d, nil
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return 0, ctx.Err()
	}
	return 0, nil
}

// warmUp runs cfg's unrecorded warm-up (when cfg.Warmup > 0) on workers,
// closed loop or at cfg.WarmupRate; operations run on opCtx and a
// cancelled ctx stops the warm-up.
func warmUp(ctx, opCtx context.Context, cfg RunConfig, keys []string, workers []Worker) {
	if cfg.Warmup <= 0 {
		return
	}
	wcfg := cfg
	wcfg.Rate, wcfg.Ops, wcfg.Duration = cfg.WarmupRate, 0, cfg.Warmup
	ls := newLoadState(wcfg, keys, workers)
	wg := ls.launch(opCtx)
	stopOnCancel(ctx, ls, wg)
}

// nodeErrors sums the workers' per-node error counts by kind.
func nodeErrors(workers []Worker) map[string]int64 {
	m := map[string]int64{}
	for _, w := range workers {
		for k, v := range w.NodeErrors() {
			m[k] += v
		}
	}
	return m
}

// accounting reads the process's allocations and CPU time at the start
// and end of a measured window.
type accounting struct {
	ms0, ms1   runtime.MemStats
	cpu0, cpu1 int64
	cpuOK      bool
}

func (a *accounting) begin() {
	runtime.GC()
	runtime.ReadMemStats(&a.ms0)
	a.cpu0, a.cpuOK = processCPU()
}

func (a *accounting) end() {
	a.cpu1, _ = processCPU()
	runtime.ReadMemStats(&a.ms1)
}

// collector drains the workers' recorders once per interval into the
// run's totals, writes the interval to the histogram log and reports
// progress. Its own allocations (encoding the interval log allocates
// thousands of objects per interval) are measured and left out of the
// per-operation figure.
type collector struct {
	ls       *loadState
	name     string // the strategy's
	tag      string // the interval log's tag prefix
	hlog     *HlogWriter
	progress func(Progress)
	total    *intervalAgg // the measured phase so far
	interval *intervalAgg // the current interval
	last     time.Time    // the current interval's start

	exMallocs, exBytes uint64 // the collector's own allocations
	cm0, cm1           runtime.MemStats
	err                error // the first histogram log error
}

func newCollector(ls *loadState, name, tag string, hlog *HlogWriter, progress func(Progress)) *collector {
	return &collector{ls: ls, name: name, tag: tag, hlog: hlog, progress: progress, total: newIntervalAgg(), interval: newIntervalAgg()}
}

// run collects once per interval until the workers (wg) are done; a
// cancelled ctx stops the load (those in flight finish). It reports
// whether ctx stopped it.
func (c *collector) run(ctx context.Context, wg *sync.WaitGroup) (interrupted bool) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(c.ls.cfg.Interval)
	defer tick.Stop()
	c.last = c.ls.start
	for {
		select {
		case <-done:
			return interrupted
		case now := <-tick.C:
			c.collect(now)
		case <-ctx.Done():
			if !interrupted {
				interrupted = true
				c.ls.stop()
			}
		}
	}
}

// final collects the last interval, ending at end. It runs after the
// window's allocations were read, so its own are not left out of them.
func (c *collector) final(end time.Time) {
	c.collect(end)
	c.exMallocs -= c.cm1.Mallocs - c.cm0.Mallocs
	c.exBytes -= c.cm1.TotalAlloc - c.cm0.TotalAlloc
}

// collect ends the current interval at now.
func (c *collector) collect(now time.Time) {
	runtime.ReadMemStats(&c.cm0)
	defer func() {
		runtime.ReadMemStats(&c.cm1)
		c.exMallocs += c.cm1.Mallocs - c.cm0.Mallocs
		c.exBytes += c.cm1.TotalAlloc - c.cm0.TotalAlloc
	}()
	for _, r := range c.ls.recs {
		r.drainInto(c.interval)
	}
	if c.hlog != nil {
		// Every non-empty histogram is logged, so the log holds every
		// recorded value (a release may land in an interval without
		// acquires).
		for i, m := range Metrics {
			if c.interval.h[i].TotalCount() == 0 {
				continue
			}
			if e := c.hlog.Write(c.tag+"."+m, c.interval.h[i], c.last, now); e != nil && c.err == nil {
				c.err = e
			}
		}
	}
	c.total.add(c.interval)
	if c.progress != nil {
		c.progress(c.snapshot(now))
	}
	c.interval.reset()
	c.last = now
}

// snapshot is the Progress at now, the current interval included.
func (c *collector) snapshot(now time.Time) Progress {
	cfg := &c.ls.cfg
	p := Progress{Strategy: c.name, Elapsed: now.Sub(c.ls.start), Ops: c.total.ops(), Errors: c.total.failedOps(), Backlog: c.ls.backlog(now),
		Duration: cfg.Duration, Target: cfg.Ops}
	if cfg.Ops > 0 {
		p.Duration = 0
	}
	if d := now.Sub(c.last).Seconds(); d > 0 {
		p.OpsPerS = float64(c.interval.ops()) / d
	}
	for _, i := range []int{mAcquireRelease, mAcquire, mNotAcquired, mFailed} {
		if h := c.total.h[i]; h.TotalCount() > 0 {
			p.P99Us = us(ValueAtPercentile(h, 99))
			break
		}
	}
	return p
}

// outcome is a measured phase's raw figures, before they are summarised
// into a StrategyResult.
type outcome struct {
	start, end   time.Time
	late         time.Duration // how late the start was after -start-at
	interrupted  bool
	total        *intervalAgg
	nodeErrs     map[string]int64 // this phase's, by kind
	workers      int
	backlog, due int64 // open loop, at the end
	busy, live   int64 // the workers' time in operations, and running (ns)
	// mallocs and bytes are the window's allocations less the
	// collector's own; cpu is the process's CPU time (ns) when cpuOK.
	mallocs, bytes int64
	cpu            int64
	cpuOK          bool
}

// outcome gathers the measured phase's figures, ended at end.
func (ls *loadState) outcome(end time.Time, c *collector, a *accounting) *outcome {
	o := &outcome{start: ls.start, end: end, total: c.total, workers: len(ls.workers), backlog: ls.backlog(end), due: ls.due(end),
		mallocs: int64(a.ms1.Mallocs-a.ms0.Mallocs) - int64(c.exMallocs),
		bytes:   int64(a.ms1.TotalAlloc-a.ms0.TotalAlloc) - int64(c.exBytes),
		cpu:     a.cpu1 - a.cpu0, cpuOK: a.cpuOK}
	// Over each worker's running time: a worker with nothing left to
	// start leaves at the end while others finish their last operation.
	for _, r := range ls.recs {
		o.busy += r.busyNs.Load()
		o.live += r.liveNs.Load()
	}
	return o
}

// strategyResult summarises a measured phase of strategy name.
func strategyResult(name string, cfg RunConfig, o *outcome) *StrategyResult {
	total := o.total
	elapsed := o.end.Sub(o.start)
	pc := cfg.Percentiles
	res := &StrategyResult{
		Name: name, Ops: total.ops(), DurationS: elapsed.Seconds(), Interrupted: o.interrupted,
		Acquire: Summarize(total.h[mAcquire], pc...), Release: Summarize(total.h[mRelease], pc...),
		AcquireRelease: Summarize(total.h[mAcquireRelease], pc...),
		NotAcquiredLat: Summarize(total.h[mNotAcquired], pc...), FailedLat: Summarize(total.h[mFailed], pc...),
		Errors: map[string]int64{}, NodeErrors: o.nodeErrs,
		Acquired: total.acquired, NotAcquired: total.notAcq, Failed: total.failedOps(), ReleaseFailed: total.relFailed,
		Extended: total.extended, NotExtended: total.notExt,
		hists: total.h,
	}
	if !cfg.StartAt.IsZero() {
		res.StartedAt = o.start.UTC().Format(time.RFC3339Nano)
		res.StartLateMs = float64(o.late) / 1e6
	}
	for k, v := range total.errs {
		res.Errors[k] = v
	}
	window := elapsed
	if cfg.Rate > 0 && cfg.Ops <= 0 && !o.interrupted {
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
		res.Backlog = o.backlog
		checkSaturation(res, o.due, cfg.Workers)
	}
	if elapsed > 0 && o.workers > 0 {
		if o.live > 0 {
			res.WorkerBusyShare = min(1, float64(o.busy)/float64(o.live))
		}
		if ops := total.ops(); ops > 0 {
			res.MeanServiceUs = float64(o.busy) / 1e3 / float64(ops)
		}
	}
	if res.Ops > 0 {
		res.AllocsPerOp = float64(max(0, o.mallocs)) / float64(res.Ops)
		res.BytesPerOp = float64(max(0, o.bytes)) / float64(res.Ops)
		if o.cpuOK {
			res.CPUUsPerOp = float64(o.cpu) / 1e3 / float64(res.Ops)
		}
	}
	return res
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
