package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// runStrategy creates the workers, warms up, then measures. Interval
// histograms go to hw (when not nil) tagged "<strategy>.<metric>", and a
// load.Progress snapshot to progress (when not nil) once per interval.
//
// When ctx is cancelled (SIGINT) during the measured phase, no new
// operation starts, those in flight finish (bounded by the node timeout; they
// are not cancelled, so they are not miscounted as failures), and the result
// covers what was measured, marked Interrupted, with ctx's error. Cancelled
// before anything was measured, it returns only the error.
func runStrategy(ctx context.Context, s lockStrategy, cfg load.RunConfig, hw *hlog.Writer, progress func(load.Progress), live *liveView) (*report.StrategyResult, error) {
	workers, err := newWorkers(ctx, s, cfg.Workers)
	defer closeWorkers(workers)
	if err != nil {
		return nil, err
	}
	return measure(ctx, s, workers, cfg, hw, progress, live)
}

// newWorkers makes n workers of s; on error, those made so far are
// returned with it (for closeWorkers).
func newWorkers(ctx context.Context, s lockStrategy, n int) ([]load.Worker, error) {
	// One after the other: set-up commands count against a node's
	// capacity (-node-cap), and all at once they would queue past their
	// timeout. A node that never answers costs one set-up timeout in all
	// (seq and fanout skip its set-up once it timed out: plainStrategy).
	workers := make([]load.Worker, 0, n)
	for i := 0; i < n; i++ {
		w, err := s.NewWorker(ctx)
		if err != nil {
			return workers, fmt.Errorf("%s: worker %d: %w", s.Name(), i, err)
		}
		workers = append(workers, w)
	}
	return workers, nil
}

func closeWorkers(workers []load.Worker) {
	for _, w := range workers {
		_ = w.Close()
	}
}

// measure runs one warm-up and one measured phase on existing workers (a
// sweep runs many on the same workers) with load.Measure, errors
// classified by classify, and summarises it. Node errors are those of this
// phase only.
func measure(ctx context.Context, s lockStrategy, workers []load.Worker, cfg load.RunConfig, hw *hlog.Writer, progress func(load.Progress), live *liveView) (*report.StrategyResult, error) {
	var log load.IntervalLog
	if hw != nil {
		log = hw
	}
	var lp *livePhase
	if live != nil {
		// the live view (-metrics-addr) sees every interval
		lp = live.phase(s.Name(), workers, log)
		log = lp
		show := progress
		progress = func(p load.Progress) {
			lp.progress(p)
			if show != nil {
				show(p)
			}
		}
	}
	if cfg.Classify == nil {
		cfg.Classify = classify
	}
	// Which node failed, and when: the workers' per-node tallies, cleared
	// after the warm-up.
	before := cfg.BeforeMeasure
	cfg.BeforeMeasure = func() {
		resetNodeTallies(workers)
		if lp != nil {
			lp.begin()
		}
		if before != nil {
			before()
		}
	}
	r, err := load.Measure(ctx, s.Name(), workers, cfg, log, progress)
	if lp != nil {
		lp.end(r)
	}
	if r == nil {
		return nil, err
	}
	res := strategyResult(s.Name(), cfg, r)
	res.NodeOutages = nodeOutages(workers, r.Start)
	return res, err
}

// strategyResult summarises a measured phase of strategy name.
func strategyResult(name string, cfg load.RunConfig, r *load.Result) *report.StrategyResult {
	h := r.Hists
	elapsed := r.End.Sub(r.Start)
	pc := cfg.Percentiles
	res := &report.StrategyResult{
		Name: name, Ops: r.Ops, DurationS: elapsed.Seconds(), Interrupted: r.Interrupted,
		Acquire: report.Summarize(h[load.MAcquire], pc...), Release: report.Summarize(h[load.MRelease], pc...),
		AcquireRelease: report.Summarize(h[load.MAcquireRelease], pc...),
		NotAcquiredLat: report.Summarize(h[load.MNotAcquired], pc...), FailedLat: report.Summarize(h[load.MFailed], pc...),
		Errors: map[string]int64{}, NodeErrors: r.NodeErrors,
		Acquired: r.Acquired, NotAcquired: r.NotAcquired, Failed: r.Failed, ReleaseFailed: r.ReleaseFailed,
		AcquiredReleased: r.Acquired - r.ReleaseFailed,
		Extended:         r.Extended, NotExtended: r.NotExtended,
		Hists: h,
	}
	if !cfg.StartAt.IsZero() {
		res.StartedAt = r.Start.UTC().Format(time.RFC3339Nano)
		res.StartLateMs = float64(r.Late) / 1e6
	}
	for k, v := range r.Errors {
		res.Errors[k] = v
	}
	window := elapsed
	if cfg.Rate > 0 && cfg.Ops <= 0 && !r.Interrupted {
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
		res.Backlog = r.Backlog
		checkSaturation(res, r.Due, cfg.Workers)
	}
	if elapsed > 0 && r.Workers > 0 {
		if r.LiveNs > 0 {
			res.WorkerBusyShare = min(1, float64(r.BusyNs)/float64(r.LiveNs))
		}
		if r.Ops > 0 {
			res.MeanServiceUs = float64(r.BusyNs) / 1e3 / float64(r.Ops)
		}
	}
	if res.Ops > 0 {
		res.AllocsPerOp = float64(max(0, r.Mallocs)) / float64(res.Ops)
		res.BytesPerOp = float64(max(0, r.Bytes)) / float64(res.Ops)
		if r.CPUOK {
			res.ProcessCPUUsPerOp = float64(r.CPUNs) / 1e3 / float64(res.Ops)
			res.HarnessCPUUsPerOp = float64(r.HarnessNs) / 1e3 / float64(res.Ops)
			res.CPUUsPerOp = max(0, res.ProcessCPUUsPerOp-res.HarnessCPUUsPerOp)
		}
	}
	return res
}

// checkSaturation marks an open-loop result saturated when it did not keep
// up with its target: the achieved rate is below report.SaturationShare of the
// target, or operations due were left unstarted at the end (the backlog grew
// beyond what the workers had in hand).
func checkSaturation(res *report.StrategyResult, due int64, workers int) {
	switch {
	case res.OpsPerSec < report.SaturationShare*res.TargetRate:
		res.Saturated = true
		res.Saturation = fmt.Sprintf("achieved %s of the %s ops/s target (%.0f%%)",
			format.Count(res.OpsPerSec), format.Count(res.TargetRate), 100*res.OpsPerSec/res.TargetRate)
	case res.Backlog > max(int64(workers), due/100):
		res.Saturated = true
		res.Saturation = fmt.Sprintf("%d of %d operations due were never started (the backlog grew)", res.Backlog, due)
	}
}

func us(ns int64) float64 { return float64(ns) / 1e3 }
