package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// KindOther is the kind of an error when RunConfig.Classify is not set.
const KindOther = "other"

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
	// KeyFirst is the index of the first key (names <prefix><strategy>:<KeyFirst>
	// .. <KeyFirst+Keys-1>): a load-generator process given a segment of
	// the key space (redmux-bench -segment) uses its own contiguous range.
	KeyFirst int
	Workload string
	// Hold is the time each acquired lock is held before its release
	// (-hold); it is part of the acquire_release latency.
	Hold Hold
	// KeyDist is the key popularity (-keys-dist); zero: round-robin.
	KeyDist  KeyDist
	Interval time.Duration // histogram log / progress interval; default 1s
	// StartAt, when set, is when the warm-up starts (-start-at): Measure
	// waits for it, or starts at once and reports how late it was.
	StartAt time.Time
	// Tag prefixes the interval log's tags ("<Tag>.<metric>"); default the
	// strategy's name.
	Tag    string
	Prefix string // key prefix, unique per run
	// Percentiles are the percentiles the caller reports (optional;
	// Measure does not use them).
	Percentiles []float64
	// Classify names the kind of an operation's error, for Result.Errors
	// (default: every error is KindOther).
	Classify func(error) string

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

// keyNames pre-builds the key strings so the hot loop does not allocate.
func keyNames(prefix string, n int) []string { return keyNamesFrom(prefix, 0, n) }

// keyNamesFrom names the keys first .. first+n-1.
func keyNamesFrom(prefix string, first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(first+i)
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
	sink     *sink // the workers' recorders flush into it
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

// Measure runs one warm-up and one measured phase of name's workers (a
// sweep runs many on the same workers). Interval histograms go to log (when
// not nil) tagged "<cfg.Tag or name>.<metric>", and a Progress snapshot to
// progress (when not nil) once per interval. Node errors are those of this
// phase only.
//
// When ctx is cancelled (SIGINT) during the measured phase, no new
// operation starts, those in flight finish (they run on a context without
// ctx's cancellation, so they are not miscounted as failures), and the
// Result covers what was measured, marked Interrupted, with ctx's error.
// Cancelled before anything was measured, Measure returns only the error.
func Measure(ctx context.Context, name string, workers []Worker, cfg RunConfig, log IntervalLog, progress func(Progress)) (*Result, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Classify == nil {
		cfg.Classify = func(error) string { return KindOther }
	}
	tag := cfg.Tag
	if tag == "" {
		tag = name
	}
	// Operations run on a context without ctx's cancellation: a stop lets
	// them finish instead of failing them.
	opCtx := context.WithoutCancel(ctx)
	keys := keyNamesFrom(cfg.Prefix+name+":", cfg.KeyFirst, cfg.Keys)
	late, err := waitStart(ctx, cfg.StartAt)
	if err != nil {
		return nil, err
	}
	warmUp(ctx, opCtx, cfg, keys, workers)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	nodeErrs0 := nodeErrors(workers)
	loopNs := calibrate(cfg, keys)
	ls := newLoadState(cfg, keys, workers)
	c := newCollector(ls, name, tag, log, progress)

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
	r := ls.result(endT, c, &acct)
	r.Late, r.Interrupted = late, interrupted
	r.CollectNs, r.LoopNsPerOp = c.cpuNs, loopNs
	r.HarnessNs = c.cpuNs + int64(loopNs*float64(r.Ops))
	r.NodeErrors = nodeErrors(workers)
	for k, v := range nodeErrs0 {
		if r.NodeErrors[k] -= v; r.NodeErrors[k] == 0 {
			delete(r.NodeErrors, k)
		}
	}
	if interrupted {
		return r, ctx.Err()
	}
	return r, nil
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
	log      IntervalLog
	progress func(Progress)
	total    *intervalAgg // the measured phase so far
	interval *intervalAgg // the current interval
	last     time.Time    // the current interval's start

	exMallocs, exBytes uint64 // the collector's own allocations
	cpuNs              int64  // the collector's CPU time in the window (harness.go)
	cm0, cm1           runtime.MemStats
	err                error // the first histogram log error
}

func newCollector(ls *loadState, name, tag string, log IntervalLog, progress func(Progress)) *collector {
	return &collector{ls: ls, name: name, tag: tag, log: log, progress: progress, total: newIntervalAgg(), interval: newIntervalAgg()}
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
			c.cpuNs += onThread(func() { c.collect(now) })
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
		r.drainInto(&c.interval.counts)
	}
	// c.interval.h is empty (reset at the end of the last collect): the
	// sink records into it from now on.
	c.interval.h = c.ls.sink.take(c.interval.h)
	if c.log != nil {
		// Every non-empty histogram is logged, so the log holds every
		// recorded value (a release may land in an interval without
		// acquires).
		for i, m := range Metrics {
			if c.interval.h[i].TotalCount() == 0 {
				continue
			}
			if e := c.log.Write(c.tag+"."+m, c.interval.h[i], c.last, now); e != nil && c.err == nil {
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
	for _, i := range []int{MAcquireRelease, MAcquire, MNotAcquired, MFailed} {
		if h := c.total.h[i]; h.TotalCount() > 0 {
			p.P99Us = us(ValueAtPercentile(h, 99))
			break
		}
	}
	return p
}

// Result is a measured phase's raw figures; the caller summarises them.
type Result struct {
	Start, End  time.Time     // the measured window
	Late        time.Duration // how late the start was after cfg.StartAt
	Interrupted bool          // ctx was cancelled during the measured phase
	// Hists are the phase's latencies (nanoseconds), one per metric, in
	// Metrics order.
	Hists Hists
	// Ops is the operations (acquire attempts); each is Acquired,
	// NotAcquired, or failed at acquire. Failed counts the operations that
	// ended in an error, at acquire or at release (ReleaseFailed of them).
	Ops, Acquired, NotAcquired, Failed, ReleaseFailed int64
	Extended, NotExtended                             int64
	Errors                                            map[string]int64 // failed operations by kind (cfg.Classify)
	NodeErrors                                        map[string]int64 // this phase's, by kind
	Workers                                           int
	Backlog, Due                                      int64 // open loop, at the end: due but never started; due in all
	// BusyNs and LiveNs are the workers' time in operations (from each
	// operation's actual start to its end) and running, summed.
	BusyNs, LiveNs int64
	// Mallocs and Bytes are the window's allocations less the collector's
	// own (may be below zero); CPUNs is the process's CPU time over the
	// window, when CPUOK.
	Mallocs, Bytes int64
	CPUNs          int64
	CPUOK          bool
	// HarnessNs is the load generator's own share of CPUNs (harness.go):
	// the collector's measured CPU time in the window (CollectNs) plus the
	// load loop's calibrated cost per operation (LoopNsPerOp) times Ops.
	HarnessNs   int64
	CollectNs   int64
	LoopNsPerOp float64
}

// result gathers the measured phase's figures, ended at end.
func (ls *loadState) result(end time.Time, c *collector, a *accounting) *Result {
	t := c.total
	r := &Result{Start: ls.start, End: end, Hists: t.h,
		Ops: t.ops(), Acquired: t.acquired, NotAcquired: t.notAcq, Failed: t.failedOps(), ReleaseFailed: t.relFailed,
		Extended: t.extended, NotExtended: t.notExt, Errors: t.errs,
		Workers: len(ls.workers), Backlog: ls.backlog(end), Due: ls.due(end),
		Mallocs: int64(a.ms1.Mallocs-a.ms0.Mallocs) - int64(c.exMallocs),
		Bytes:   int64(a.ms1.TotalAlloc-a.ms0.TotalAlloc) - int64(c.exBytes),
		CPUNs:   a.cpu1 - a.cpu0, CPUOK: a.cpuOK}
	// Over each worker's running time: a worker with nothing left to
	// start leaves at the end while others finish their last operation.
	for _, rec := range ls.recs {
		r.BusyNs += rec.busyNs.Load()
		r.LiveNs += rec.liveNs.Load()
	}
	return r
}

// IntervalLog receives each interval's non-empty histograms (an
// HdrHistogram interval log writer).
type IntervalLog interface {
	Write(tag string, h *hdr.Histogram, from, to time.Time) error
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

func newLoadState(cfg RunConfig, keys []string, workers []Worker) *loadState {
	ls := &loadState{cfg: cfg, keys: keys, workers: workers, recs: make([]*workerRec, len(workers)), stopCh: make(chan struct{}), sink: newSink()}
	for i := range ls.recs {
		ls.recs[i] = newWorkerRec(ls.sink)
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
		began := t0 // closed loop: the operation starts now
		if open {
			began = time.Now()
		}
		end := ls.op(ctx, w, rec, key, t0, hold, timer)
		rec.busyNs.Add(int64(end.Sub(began)))
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
// release. It returns when it ended. An acquired operation is recorded once
// it ended, under one lock of rec: the clock is read once per step.
func (ls *loadState) op(ctx context.Context, w Worker, rec *workerRec, key string, t0 time.Time, hold time.Duration, timer *time.Timer) time.Time {
	ok, err := w.Acquire(ctx, key)
	t1 := time.Now()
	if err != nil || !ok {
		rec.mu.Lock()
		if err != nil {
			rec.errs[ls.cfg.Classify(err)]++
			rec.failed++
			rec.record(MFailed, t1.Sub(t0))
		} else {
			rec.notAcq++
			rec.record(MNotAcquired, t1.Sub(t0))
		}
		rec.mu.Unlock()
		return t1
	}
	t2 := t1
	if ls.cfg.Workload == WorkloadAcquireExtendRelease {
		ext, err := w.Extend(ctx)
		rec.mu.Lock()
		switch {
		case err != nil:
			rec.errs["extend_"+ls.cfg.Classify(err)]++
		case ext:
			rec.extended++
		default:
			rec.notExt++
		}
		rec.mu.Unlock()
		t2 = time.Now()
	}
	if hold > 0 {
		// Held to its end even when the run is stopped: a hold is bounded
		// (-hold), and cutting it would skew the last operations.
		timer.Reset(hold)
		<-timer.C
		t2 = time.Now()
	}
	err = w.Release(ctx)
	t3 := time.Now()
	rec.mu.Lock()
	rec.acquired++
	rec.record(MAcquire, t1.Sub(t0))
	if err != nil {
		rec.errs["release_"+ls.cfg.Classify(err)]++
		rec.relFailed++
		rec.record(MFailed, t3.Sub(t0))
	} else {
		rec.record(MRelease, t3.Sub(t2))
		rec.record(MAcquireRelease, t3.Sub(t0))
	}
	rec.mu.Unlock()
	return t3
}

// Worker is one benchmark worker's lock client. A worker holds at most one
// lock at a time: Extend and Release act on the lock of the last successful
// Acquire. Workers are used by one goroutine.
type Worker interface {
	// Acquire tries once (no retry) to take the lock on key. It reports
	// false with a nil error when the lock is held by someone else.
	Acquire(ctx context.Context, key string) (bool, error)
	// Extend resets the held lock's TTL; false when a quorum did not agree
	// within the remaining validity.
	Extend(ctx context.Context) (bool, error)
	// Release releases the held lock on every node.
	Release(ctx context.Context) error
	// NodeErrors returns per-node error counts by kind (called after the
	// run, once the worker is idle).
	NodeErrors() map[string]int64
	Close() error
}
