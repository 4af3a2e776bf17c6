package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redmux/redmux/bench/internal/format"
	"github.com/redmux/redmux/bench/internal/hlog"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
)

// defaultSweepOut is the report directory of a sweep without -out.
const defaultSweepOut = "results/latest-sweep"

// Sweep verdict rules.
const (
	// sweepAutoFactor: without -slo, a step holds while its p99 is within
	// this factor of the lightest step's p99 (and at least
	// sweepAutoMinSlack above it).
	sweepAutoFactor   = 3.0
	sweepAutoMinSlack = time.Millisecond
	// sweepMaxProbeMultiple: while steps hold, a probed sweep goes on past
	// the probe's rate, at the same spacing, up to this multiple of it.
	sweepMaxProbeMultiple = 3.0
)

// defaultSLO is the objective of a sweep without -slo: fixed (documented
// in README.md), so that two sweeps of one command are judged by one bar
// (issue 48: an objective derived from each run's lightest step moved
// from p99<10.11ms to p99<6.75ms between two runs of one command).
var defaultSLO = report.SLO{P: 99, Max: 5 * time.Millisecond}

// sloFromFile reads the objective an earlier sweep was judged by from its
// sweep.json (or the directory that holds it).
func sloFromFile(path string) (*report.SLO, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, report.FileSweepJSON)
	}
	f, err := report.Read(path)
	var fe *report.FormatError
	if err != nil && !errors.As(err, &fe) {
		return nil, err
	}
	var rep *report.SweepReport
	if err == nil {
		rep, err = f.Sweep()
	}
	if err != nil || len(rep.Strategies) == 0 {
		return nil, fmt.Errorf("%s: not a redmux-bench sweep.json (no strategies)", path)
	}
	ss := rep.Strategies[0]
	if !(ss.SLOPct > 0 && ss.SLOPct < 100) || !(ss.SLOBudgetUs > 0) {
		return nil, fmt.Errorf("%s: no objective recorded (slo_percentile, slo_budget_us)", path)
	}
	return &report.SLO{P: ss.SLOPct, Max: time.Duration(ss.SLOBudgetUs * 1e3)}, nil
}

// parseSLO parses "p99<2ms", "p99.9<5ms" (also "<=").
func parseSLO(s string) (*report.SLO, error) {
	bad := fmt.Errorf("bad -slo %q: want pP<DURATION, e.g. p99<2ms or p99.9<5ms", s)
	p, d, ok := strings.Cut(strings.TrimSpace(s), "<")
	if !ok || !strings.HasPrefix(p, "p") {
		return nil, bad
	}
	d = strings.TrimPrefix(d, "=")
	v, err := strconv.ParseFloat(p[1:], 64)
	if err != nil || !(v > 0 && v < 100) {
		return nil, bad
	}
	max, err := time.ParseDuration(d)
	if err != nil || max <= 0 {
		return nil, bad
	}
	return &report.SLO{P: v, Max: max}, nil
}

// sweepStepFrom summarizes one measured step.
func sweepStepFrom(res *report.StrategyResult, rate float64, pcts []float64) *report.SweepStep {
	all := load.NewHistogram()
	for _, i := range []int{load.MAcquireRelease, load.MNotAcquired, load.MFailed} {
		all.Merge(res.Hists[i])
	}
	// An operation whose release failed after it acquired is in failed;
	// an acquired one still releasing when the step ended is in neither.
	st := &report.SweepStep{
		TargetRate: rate, OpsPerSec: res.OpsPerSec, Ops: res.Ops, DurationS: res.DurationS,
		Saturated: res.Saturated, Saturation: res.Saturation, Failed: res.Failed, FailedShare: res.FailedShare(),
		Latency: report.Summarize(all, pcts...), ClientCPUUsPerOp: res.CPUUsPerOp, Interrupted: res.Interrupted,
		WorkerBusyShare: res.WorkerBusyShare, MeanServiceUs: res.MeanServiceUs, Hist: all,
	}
	if len(res.Errors) > 0 {
		st.Errors = res.Errors
	}
	if len(res.NodeErrors) > 0 {
		st.NodeErrors = res.NodeErrors
	}
	st.NodeOutages = res.NodeOutages
	if res.Server != nil {
		st.ServerCPUUsPerOpPerNode = res.Server.CPUUsPerOpPerNode
		st.ServerCPUMaxNodeUsPerOp = res.Server.MaxNodeCPUUsPerOp
		st.ServerCPUSource = res.Server.CPUSource
	}
	return st
}

// stepMachineFrom records how busy the whole machine was during the step: its
// load average, busy CPUs, those used by other processes than this one and
// its local servers (local: the servers run here), and steal.
func stepMachineFrom(st *report.SweepStep, before, after machineSnap, res *report.StrategyResult, nodes int, local bool) {
	if v, err := strconv.ParseFloat(loadAvg(), 64); err == nil {
		st.LoadAvg = v
	}
	busy, steal, ok := machineUse(before, after, numCPU())
	if !ok {
		return
	}
	st.MachineBusyCores, st.StealShare = busy, steal
	ours := res.OpsPerSec * res.ProcessCPUUsPerOp / 1e6
	if local {
		ours += res.OpsPerSec * st.ServerCPUUsPerOpPerNode * float64(nodes) / 1e6
	}
	st.OtherCores = max(0, busy-ours)
}

// sweepRates are the coarse steps: steps evenly spaced up to the probe's
// closed-loop rate, then one 10% beyond it.
func sweepRates(probe float64, steps int) []float64 {
	var out []float64
	for k := 1; k <= steps; k++ {
		out = append(out, roundRate(probe*float64(k)/float64(steps)))
	}
	return append(out, roundRate(probe*1.1))
}

// roundRate keeps three significant digits (a readable target).
func roundRate(r float64) float64 {
	if r <= 0 {
		return 0
	}
	e := math.Pow(10, math.Floor(math.Log10(r))-2)
	return math.Max(1, math.Round(r/e)*e)
}

// runSweep runs a capacity sweep: per strategy, open-loop steps of rising rate
// (each warmed up at its own rate, then measured for -step), stopping at the
// first saturated step or after two steps in a row that do not hold (a probed
// sweep whose steps all hold goes on at the same spacing, up to
// sweepMaxProbeMultiple times the probe's rate), then bisection steps between
// the last that held and the first that did not. Interrupted (ctx), it returns
// what was measured with ErrInterrupted.
func runSweep(ctx context.Context, cfg *Config, o Options) (*report.SweepReport, error) {
	o.discardUnset()
	if err := checkOut(cfg); err != nil {
		return nil, err
	}
	if n := outNotice(cfg); n != "" {
		fmt.Fprintln(o.Stderr, "redmux-bench sweep: "+n)
	}
	sess, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer sess.t.close()
	rep := &report.SweepReport{Config: sess.config, Env: sess.env}
	rep.Config.Loop = "open"
	rep.Config.DurationS = cfg.Step.Seconds()

	var hbuf bytes.Buffer
	hw := hlog.NewWriter(&hbuf, time.Now(), "redmux-bench sweep interval log; values in nanoseconds; tags <strategy>.probe.<metric>, <strategy>.r<rate>.<metric> and, for a step run again, <strategy>.r<rate>.run<k>.<metric> (each step's hlog_tag in sweep.json)", cfg.Command, versionString())
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	sw := &sweeper{cfg: cfg, sess: sess, keyPrefix: "redmux-bench:" + hex.EncodeToString(prefix[:]) + ":", hw: hw, tags: map[string]int{}}
	sw.say = func(format string, a ...any) {
		if !cfg.Quiet {
			fmt.Fprintf(o.Stderr, "redmux-bench sweep: "+format+"\n", a...)
		}
	}
	steps := fmt.Sprintf("a closed-loop probe, then up to %d coarse steps and %d refining ones per strategy", cfg.Steps, cfg.Refine)
	if cfg.Rates != nil {
		steps = fmt.Sprintf("steps at %s ops/s and %d refining ones per strategy", joinFloats(&cfg.Rates), cfg.Refine)
	}
	sw.say("measuring: %s; %s warm-up then %s per step; %s", report.RunDescription(rep.Config), cfg.Warmup, cfg.Step, steps)
	if !cfg.StartAt.IsZero() {
		// Several sweeps started together begin together; later steps
		// drift apart (steps repeat and stop where each machine's
		// target saturates).
		sw.say("waiting for -start-at %s", cfg.StartAt.UTC().Format(time.RFC3339))
		t := time.NewTimer(time.Until(cfg.StartAt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}

	// Phase 1: every strategy's probe and lightest step, so that one
	// objective (-slo, or the automatic one derived from the best
	// strategy's lightest step) judges every strategy.
	var runs []*strategySweep
	for _, name := range cfg.Strategies {
		if ctx.Err() != nil {
			break
		}
		r, err := sw.calibrate(ctx, name)
		if r != nil && len(r.ss.Steps) > 0 {
			runs = append(runs, r)
		}
		if err != nil && ctx.Err() == nil {
			return nil, cfg.secrets().hideErr(err)
		}
	}
	rep.SLO, rep.SLOSource = sw.objective(runs)
	if len(runs) > 0 {
		sw.say("objective for every strategy: %s (%s)", rep.SLO, rep.SLOSource)
	}
	// Phase 2: each strategy's steps from its lightest on, under that
	// objective.
	for _, r := range runs {
		if ctx.Err() == nil {
			if err := sw.sweepOn(ctx, r); err != nil && ctx.Err() == nil {
				return nil, cfg.secrets().hideErr(err)
			}
		}
		r.ss.Interrupted = r.ss.Interrupted || ctx.Err() != nil && !r.done
		finishStrategy(r.ss, sw.slo, rep.SLOSource, cfg)
		rep.Strategies = append(rep.Strategies, r.ss)
	}
	rep.Interrupted = ctx.Err() != nil
	if len(rep.Strategies) == 0 {
		if rep.Interrupted {
			return nil, fmt.Errorf("%w before any step was measured; nothing written", ErrInterrupted)
		}
		return nil, errors.New("no strategy could run")
	}
	rep.Hlog = hbuf.Bytes()
	rep.Env.LoadAvgEnd = loadAvg()
	tableOut := o.Stdout
	if cfg.JSON == "-" || cfg.CSV == "-" {
		tableOut = o.Stderr
	}
	if !cfg.Quiet {
		report.WriteSweepTable(tableOut, rep)
	}
	if err := writeSweepOutputs(cfg, rep, o.Stdout); err != nil {
		return rep, cfg.secrets().hideErr(err)
	}
	if rep.Interrupted {
		return rep, fmt.Errorf("%w: the sweep report covers the steps measured", ErrInterrupted)
	}
	return rep, nil
}

// sweepStepHook, when set (tests), runs as each step's measured window
// starts, with the step's interval-log tag and the nodes: how a test plants
// a fault in one step (FAKE admin commands on the embedded cluster).
var sweepStepHook func(tag string, addrs []string, opt *connOpts)

// sweeper is one sweep's shared state.
type sweeper struct {
	cfg       *Config
	sess      *session
	keyPrefix string
	hw        *hlog.Writer
	say       func(string, ...any)
	slo       report.SLO
	// tags counts the runs of each step tag, so that a step run again gets
	// its own interval-log tag.
	tags map[string]int
}

// strategySweep is one strategy's sweep in progress.
type strategySweep struct {
	ss    *report.SweepStrategy
	rates []float64
	// first is the lightest step, measured in phase 1 and judged in phase 2.
	first *report.SweepStep
	// firstRun is the lightest step's first run when it failed or did not
	// keep up and first is its re-run, made in phase 1 so that a glitch
	// does not set the automatic objective (nil: first is the first run).
	firstRun *report.SweepStep
	done     bool
}

// open makes a strategy and its workers (closed by the returned func).
func (sw *sweeper) open(ctx context.Context, name string) (lockStrategy, []load.Worker, func(), error) {
	s, err := newStrategy(name, sw.sess.t.addrs, sw.sess.params, sw.cfg.Conns)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	workers, err := newWorkers(ctx, s, sw.cfg.Workers)
	closeAll := func() { closeWorkers(workers); _ = s.Close() }
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return s, workers, closeAll, nil
}

func (sw *sweeper) base() load.RunConfig {
	cfg := sw.cfg
	return load.RunConfig{
		Workers: cfg.Workers, Duration: cfg.Step, Warmup: cfg.Warmup, Keys: cfg.Keys,
		Workload: cfg.Workload, Hold: cfg.Hold, KeyDist: cfg.KeyDist, Prefix: sw.keyPrefix, Percentiles: cfg.Percentiles,
	}
}

// calibrate runs a strategy's closed-loop probe (without -rates) and its
// lightest step, not yet judged.
func (sw *sweeper) calibrate(ctx context.Context, name string) (*strategySweep, error) {
	s, workers, closeAll, err := sw.open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	r := &strategySweep{ss: &report.SweepStrategy{Name: name}, rates: sw.cfg.Rates}
	if len(r.rates) == 0 {
		pc := sw.base()
		pc.Tag = name + ".probe"
		res, err := measure(ctx, s, workers, pc, sw.hw, nil, nil)
		if err != nil {
			return r, err
		}
		if res.Ops == 0 || res.FailedShare() > 0.5 {
			return r, fmt.Errorf("%s: the closed-loop probe failed (%d of %d operations failed: %s)", name, res.Failed, res.Ops, report.ErrString(res.Errors))
		}
		r.ss.ProbeOpsPerSec = res.OpsPerSec
		r.ss.ProbeWorkerBusy = res.WorkerBusyShare
		r.rates = sweepRates(res.OpsPerSec, sw.cfg.Steps)
		sw.say("%s: closed-loop probe %s ops/s with %d workers; steps %s", name, format.Count(res.OpsPerSec), sw.cfg.Workers, rateList{&r.rates}.String())
	}
	st, err := sw.measureStep(ctx, s, workers, name, r.rates[0], false)
	if why := st.Glitch(); why != "" && err == nil {
		// A glitch (a node paused, a stall) in the lightest step is run
		// again at once, before any objective is derived from it.
		st.Repeated = true
		r.firstRun = st
		r.ss.Steps = append(r.ss.Steps, st)
		sw.say("%s: lightest step %s ops/s: %s; run again", name, format.Count(st.TargetRate), why)
		st, err = sw.measureStep(ctx, s, workers, name, r.rates[0], false)
	}
	if st != nil {
		r.first = st
		r.ss.Steps = append(r.ss.Steps, st)
		sw.say("%s: lightest step %s ops/s: achieved %s, p99 %s, failed %.2f%%", name, format.Count(st.TargetRate), format.Count(st.OpsPerSec),
			format.Us(st.Latency.P99Us), 100*st.FailedShare)
	}
	return r, err
}

// objective sets sw.slo: -slo, else the automatic one from the best
// (lowest p99) lightest step of every strategy that completed one.
func (sw *sweeper) objective(runs []*strategySweep) (string, string) {
	switch {
	case sw.cfg.SLO != nil && sw.cfg.SLOFrom != "":
		sw.slo = *sw.cfg.SLO
		return sw.slo.String(), "-slo-from " + sw.cfg.SLOFrom
	case sw.cfg.SLO != nil:
		sw.slo = *sw.cfg.SLO
		return sw.slo.String(), "-slo"
	case !sw.cfg.SLOAuto:
		sw.slo = defaultSLO
		return sw.slo.String(), "the default, fixed so that runs of one command are judged alike; pin another with -slo, e.g. -slo 'p99.9<10ms'"
	}
	var best *strategySweep
	for _, r := range runs {
		if r.first == nil || r.first.Ops == 0 || r.first.Interrupted {
			continue
		}
		if best == nil || r.first.Latency.P99Us < best.first.Latency.P99Us {
			best = r
		}
	}
	if best == nil {
		sw.slo = report.SLO{P: 99, Max: sweepAutoMinSlack}
		return sw.slo.String(), "automatic: no lightest step completed"
	}
	p99 := time.Duration(load.ValueAtPercentile(best.first.Hist, 99))
	sw.slo = report.SLO{P: 99, Max: autoBudget(p99)}
	return sw.slo.String(), fmt.Sprintf("automatic, one for every strategy: %gx the p99 of the best strategy's lightest step (%s at %s ops/s: p99 %s), at least +%v",
		sweepAutoFactor, best.ss.Name, format.Count(best.first.TargetRate), format.Us(us(int64(p99))), sweepAutoMinSlack)
}

// autoBudget is the automatic objective's bound for a lightest step's p99.
func autoBudget(p99 time.Duration) time.Duration {
	return max(time.Duration(sweepAutoFactor*float64(p99)), p99+sweepAutoMinSlack).Round(10 * time.Microsecond)
}

// measureStep runs one open-loop step (not judged). Each run of a rate has
// its own interval-log tag.
func (sw *sweeper) measureStep(ctx context.Context, s lockStrategy, workers []load.Worker, name string, rate float64, refine bool) (*report.SweepStep, error) {
	rc := sw.base()
	rc.Rate, rc.WarmupRate = rate, rate
	tag := name + ".r" + strconv.FormatFloat(rate, 'f', -1, 64)
	sw.tags[tag]++
	if k := sw.tags[tag]; k > 1 {
		tag += ".run" + strconv.Itoa(k)
	}
	rc.Tag = tag
	var before, after serverSnap
	var mBefore, mAfter machineSnap
	rc.BeforeMeasure = func() {
		before = serverSnapshot(ctx, sw.sess.t, sw.sess.opt)
		mBefore = machineSnapshot()
		if sweepStepHook != nil {
			sweepStepHook(tag, sw.sess.t.addrs, sw.sess.opt)
		}
	}
	rc.AfterMeasure = func() {
		mAfter = machineSnapshot()
		after = serverSnapshot(context.WithoutCancel(ctx), sw.sess.t, sw.sess.opt)
	}
	res, err := measure(ctx, s, workers, rc, sw.hw, nil, nil)
	if res == nil {
		return nil, err
	}
	res.Server = serverCost(before, after, res.Ops, len(sw.sess.t.addrs))
	notReadWhy(res.Server, sw.sess.t.addrs)
	nameOutages(res.NodeOutages, sw.sess.config.Nodes)
	st := sweepStepFrom(res, rate, sw.cfg.Percentiles)
	stepMachineFrom(st, mBefore, mAfter, res, len(sw.sess.t.addrs), len(sw.cfg.Nodes) == 0)
	st.Refinement = refine
	st.Tag = tag
	return st, err
}

// stepRunner runs one strategy's sweep steps on workers opened at the
// first step.
type stepRunner struct {
	sw      *sweeper
	ctx     context.Context
	r       *strategySweep
	s       lockStrategy
	workers []load.Worker
	closers []func()
	opened  bool
}

// ensure opens the strategy and its workers once.
func (sr *stepRunner) ensure() error {
	if sr.opened {
		return nil
	}
	s, workers, closeAll, err := sr.sw.open(sr.ctx, sr.r.ss.Name)
	if err != nil {
		return err
	}
	sr.s, sr.workers = s, workers
	sr.opened = true
	sr.closers = append(sr.closers, closeAll)
	return nil
}

func (sr *stepRunner) close() {
	for _, c := range sr.closers {
		c()
	}
}

// report prints a judged step; after a step that did not hold, it lets
// the queues left by an overloaded step drain before the next.
func (sr *stepRunner) report(st *report.SweepStep) {
	sw, ctx := sr.sw, sr.ctx
	verdict := "held"
	if !st.Held {
		verdict = "did not hold: " + st.Why
	}
	sw.say("%s: target %s ops/s, achieved %s, %s %s, failed %.2f%%: %s", sr.r.ss.Name, format.Count(st.TargetRate), format.Count(st.OpsPerSec),
		format.Percentile(sw.slo.P), format.Us(st.SLOUs), 100*st.FailedShare, verdict)
	if !st.Held && ctx.Err() == nil {
		// Let queues left by an overloaded step drain before the next.
		cool := time.NewTimer(max(time.Second, sw.cfg.Step/2))
		select {
		case <-cool.C:
		case <-ctx.Done():
			cool.Stop()
		}
	}
}

// step1 measures, judges and reports one step at rate.
func (sr *stepRunner) step1(rate float64, refine bool) (*report.SweepStep, error) {
	if err := sr.ensure(); err != nil {
		return nil, err
	}
	st, err := sr.sw.measureStep(sr.ctx, sr.s, sr.workers, sr.r.ss.Name, rate, refine)
	if st == nil {
		return nil, err
	}
	st.Judge(sr.sw.slo)
	sr.r.ss.Steps = append(sr.r.ss.Steps, st)
	sr.report(st)
	return st, err
}

// step runs a rate (unless st is that rate's step, already measured), and
// once more when it missed only the latency objective or did not keep up
// (see report.SweepStep.Repeated). saturated reports that the rate did not hold
// and one of its runs could not keep up: a saturated first run whose
// re-run then kept up but missed the objective (the queue left by the
// first run) is still a rate past saturation, and the sweep stops there.
func (sr *stepRunner) step(st *report.SweepStep, rate float64, refine bool) (_ *report.SweepStep, saturated bool, err error) {
	if st == nil {
		if st, err = sr.step1(rate, refine); st == nil || err != nil {
			return st, false, err
		}
	}
	if !st.Rerunnable() {
		return st, !st.Held && st.Saturated, nil
	}
	st.Repeated = true
	sr.sw.say("%s: target %s ops/s: run again (%s)", sr.r.ss.Name, format.Count(rate), st.Why)
	again, err := sr.step1(rate, refine)
	if again == nil {
		return nil, false, err
	}
	return again, !again.Held && (again.Saturated || st.Saturated), err
}

// sweepOn judges a strategy's lightest step under sw.slo and runs the
// rest of its steps: rising rates, stopping at the first saturated step
// or after two steps in a row that do not hold (a probed sweep whose steps
// all hold goes on at the same spacing, up to sweepMaxProbeMultiple times
// the probe's rate), then bisection steps between the last that held and
// the first that did not. A step that misses only the objective or does
// not keep up is run again (see report.SweepStep.Repeated).
func (sw *sweeper) sweepOn(ctx context.Context, r *strategySweep) error {
	cfg, ss := sw.cfg, r.ss
	sr := &stepRunner{sw: sw, ctx: ctx, r: r}
	defer sr.close()
	// The lightest step, measured in phase 1 (with its first run when
	// that was run again there).
	first := r.first
	if r.firstRun != nil {
		r.firstRun.Judge(sw.slo)
		sr.report(r.firstRun)
	}
	first.Judge(sw.slo)
	sr.report(first)
	if first.Interrupted {
		return nil
	}
	fails := 0
	for i := 0; i < len(r.rates); i++ {
		rate := r.rates[i]
		var st *report.SweepStep
		var saturated bool
		var err error
		switch {
		case i == 0 && r.firstRun != nil:
			st, saturated = first, !first.Held && (first.Saturated || r.firstRun.Saturated)
		case i == 0:
			st, saturated, err = sr.step(first, rate, false)
		default:
			st, saturated, err = sr.step(nil, rate, false)
		}
		if st == nil || err != nil || st.Interrupted {
			return err
		}
		if st.Held {
			fails = 0
			if i == len(r.rates)-1 && ss.ProbeOpsPerSec > 0 && rate < sweepMaxProbeMultiple*ss.ProbeOpsPerSec {
				// The probe read low (a closed loop of -c workers need not
				// reach capacity): go on at the same spacing.
				r.rates = append(r.rates, roundRate(rate+ss.ProbeOpsPerSec/float64(cfg.Steps)))
			}
			continue
		}
		fails++
		if saturated || fails >= 2 {
			break
		}
	}
	ss.FindKnee()
	for k := 0; k < cfg.Refine && ss.Knee != nil; k++ {
		hi := ss.FirstFailAbove()
		if hi == nil {
			break
		}
		mid := roundRate((ss.KneeRate + hi.TargetRate) / 2)
		if mid <= ss.KneeRate || mid >= hi.TargetRate {
			break
		}
		st, _, err := sr.step(nil, mid, true)
		if st == nil || err != nil || st.Interrupted {
			return err
		}
		ss.FindKnee()
	}
	r.done = true
	return nil
}

// finishStrategy records the objective, the knee and what bound it.
func finishStrategy(ss *report.SweepStrategy, slo report.SLO, source string, cfg *Config) {
	ss.SLO = slo.String()
	switch {
	case cfg.SLOAuto:
		ss.SLO += " (automatic, the same for every strategy)"
	case cfg.SLO == nil:
		ss.SLO += " (default)"
	}
	ss.SLOPct, ss.SLOBudgetUs = slo.P, float64(slo.Max)/1e3
	ss.FindKnee()
	ss.Bound = strategyBound(ss, cfg)
	ss.ClientCPUFit, ss.ServerCPUFit = report.FitCost(ss.Steps, report.ClientCost), report.FitCost(ss.Steps, report.BusiestCost)
	// Starved at the knee or past it first; a strategy with no knee (or
	// none reached) by any of its steps.
	ss.Starved = starvedAround(ss.Knee, ss.FirstFailAbove())
	if ss.Starved == "" && (ss.Knee == nil || !ss.Saturated) {
		ss.Starved = starvedAround(ss.Steps...)
	}
}

// sweepWorkersBusy: past the knee, workers busy at least this share of
// the time were the limit ("bound by the workers").
const sweepWorkersBusy = 0.9

// strategyBound names what most likely limited the knee, from the CPU figures of
// the knee and the measured worker occupancy of the first step past it.
func strategyBound(ss *report.SweepStrategy, cfg *Config) string {
	k := ss.Knee
	if k == nil || !ss.Saturated {
		return ""
	}
	nodes := cfg.Fake
	if len(cfg.Nodes) > 0 {
		nodes = len(cfg.Nodes)
	} else if cfg.RealLocal > 0 {
		nodes = cfg.RealLocal
	}
	server := ss.KneeRate * k.ServerCPUUsPerOpPerNode / 1e6
	busiest := ss.KneeRate * max(k.ServerCPUMaxNodeUsPerOp, k.ServerCPUUsPerOpPerNode) / 1e6
	client := ss.KneeRate * k.ClientCPUUsPerOp / 1e6
	// The workers were the limit when, past the knee, they were busy all
	// the time and the rate asked for needed more of them than -c at the
	// knee's service time (operations did not slow down: the servers
	// kept up, the workers did not). Busy workers whose operations slowed
	// down are waiting on a server that is the limit.
	busy, workersCap, needed := 0.0, 0.0, 0.0
	if f := ss.FirstFailAbove(); f != nil {
		busy, needed = f.WorkerBusyShare, f.TargetRate
	}
	if k.MeanServiceUs > 0 {
		workersCap = float64(cfg.Workers) / (k.MeanServiceUs / 1e6)
	}
	local := len(cfg.Nodes) == 0
	f := ss.FirstFailAbove()
	capNote := ""
	if cfg.NodeCap > 0 {
		// The cap bounds the knee only where queues near it build up:
		// steps that broke far below it broke on something else
		// (timeouts on a loaded machine, the objective).
		capOps := cfg.NodeCap / 2
		if f == nil || f.TargetRate >= sweepCapNear*capOps {
			return fmt.Sprintf("the planted node cap (-node-cap %g commands/s, %g lock ops/s)", cfg.NodeCap, capOps)
		}
		capNote = fmt.Sprintf("not the planted node cap (-node-cap %g commands/s, %g lock ops/s: the first step that did not hold asked for %s ops/s, %.0f%% of it, and %s); ",
			cfg.NodeCap, capOps, format.Count(f.TargetRate), 100*f.TargetRate/capOps, f.Why)
	}
	return capNote + strategyBoundBy(ss, cfg, boundFigures{nodes: nodes, server: server, busiest: busiest, client: client, busy: busy, workersCap: workersCap, needed: needed, local: local})
}

// sweepCapNear: a planted -node-cap bounds the knee when the first step
// that did not hold asked for at least this share of the cap's rate.
const sweepCapNear = 0.8

// starvedAround says how the machine was CPU-starved at the knee or at the
// first step past it ("" when neither was).
func starvedAround(steps ...*report.SweepStep) string {
	for _, st := range steps {
		if why := st.Starved(numCPU()); why != "" {
			return fmt.Sprintf("at %s ops/s: %s", format.Count(st.TargetRate), why)
		}
	}
	return ""
}

// boundFigures are the figures bound decides by.
type boundFigures struct {
	nodes                                             int
	server, busiest, client, busy, workersCap, needed float64
	local                                             bool
}

// strategyBoundBy names the resource that bound the knee from its figures, the
// latency objective itself when none did.
func strategyBoundBy(ss *report.SweepStrategy, cfg *Config, b boundFigures) string {
	k, nodes, server, busiest, client, busy, workersCap, needed, local := ss.Knee, b.nodes, b.server, b.busiest, b.client, b.busy, b.workersCap, b.needed, b.local
	switch {
	case busiest >= 0.8:
		return fmt.Sprintf("a node's core: the busiest node used %.2f cores at the knee (Redis runs commands on one core)", busiest)
	case client >= 0.8*float64(numCPU()):
		return fmt.Sprintf("the client's CPU: %.2f of %d cores at the knee", client, numCPU())
	case local && server > 0 && client+server*float64(nodes) >= 0.7*float64(numCPU()):
		return fmt.Sprintf("this machine's CPU: client %.2f + servers %.2f cores of %d at the knee (they share it)", client, server*float64(nodes), numCPU())
	case busy >= sweepWorkersBusy && workersCap > 0 && needed >= 0.9*workersCap:
		return fmt.Sprintf("the workers: -c %d at the knee's %s per operation carry %s ops/s; past the knee they were busy %.0f%% of the time (raise -c)", cfg.Workers, format.Us(k.MeanServiceUs), format.Count(workersCap), 100*busy)
	case starvedAround(k, ss.FirstFailAbove()) != "":
		return "this machine's CPU, starved by other work (" + starvedAround(k, ss.FirstFailAbove()) + "): the knee is this machine's, not the target's; sweep again on a quiet machine, or with the client on a machine of its own"
	case server == 0 && !local:
		return fmt.Sprintf("not the client's CPU nor -c (workers busy %.0f%% past the knee, waiting on slower operations); the servers' CPU is unknown (no INFO CPU)", 100*busy)
	}
	return fmt.Sprintf("not CPU nor -c by these figures (workers busy %.0f%% past the knee, the knee's %s per operation would carry more): the latency objective itself", 100*busy, format.Us(k.MeanServiceUs))
}
