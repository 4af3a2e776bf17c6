package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// DefaultSweepOut is the report directory of a sweep without -out.
const DefaultSweepOut = "results/latest-sweep"

// Sweep verdict rules.
const (
	// SweepAutoFactor: without -slo, a step holds while its p99 is within
	// this factor of the lightest step's p99 (and at least
	// SweepAutoMinSlack above it).
	SweepAutoFactor   = 3.0
	SweepAutoMinSlack = time.Millisecond
	// SweepMaxFailedShare: a step with a larger share of failed operations
	// does not hold, whatever its latency.
	SweepMaxFailedShare = 0.01
	// SweepMaxProbeMultiple: while steps hold, a probed sweep goes on past
	// the probe's rate, at the same spacing, up to this multiple of it.
	SweepMaxProbeMultiple = 3.0
)

// SLO is a latency objective: percentile P of every operation's latency
// at most Max.
type SLO struct {
	P   float64
	Max time.Duration
}

func (s SLO) String() string { return pctName(s.P) + "<" + s.Max.String() }

// ParseSLO parses "p99<2ms", "p99.9<5ms" (also "<=").
func ParseSLO(s string) (*SLO, error) {
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
	return &SLO{P: v, Max: max}, nil
}

type sloFlag struct{ p **SLO }

func (f sloFlag) String() string {
	if f.p == nil || *f.p == nil {
		return ""
	}
	return (*f.p).String()
}

func (f sloFlag) Set(s string) error {
	v, err := ParseSLO(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), fmt.Sprintf("bad -slo %q: ", s)))
	}
	*f.p = v
	return nil
}

type rateList struct{ p *[]float64 }

func (l rateList) String() string { return joinFloats(l.p) }

func (l rateList) Set(s string) error {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v <= 1e8) {
			return errors.New("rates are operations per second > 0, comma-separated, e.g. 500,1000,2000")
		}
		out = append(out, v)
	}
	if len(out) > 100 {
		return errors.New("at most 100 rates")
	}
	sort.Float64s(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return fmt.Errorf("rate %g given twice", out[i])
		}
	}
	*l.p = out
	return nil
}

// SweepStep is one open-loop step of a sweep. Latencies are of every
// operation, from its intended start to its end (acquire and release when
// acquired; refused and failed operations to their outcome).
type SweepStep struct {
	TargetRate  float64 `json:"target_rate"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	Ops         int64   `json:"ops"`
	DurationS   float64 `json:"duration_s"`
	Saturated   bool    `json:"saturated"`
	Saturation  string  `json:"saturation,omitempty"`
	Failed      int64   `json:"failed"`
	FailedShare float64 `json:"failed_share"`
	Latency     Latency `json:"latency"`
	// SLOUs is the objective's percentile of this step.
	SLOUs float64 `json:"slo_us"`
	Held  bool    `json:"held"`
	// Why says why the step did not hold.
	Why string `json:"why,omitempty"`
	// Refinement: a bisection step between the coarse ones.
	Refinement bool `json:"refinement,omitempty"`
	// Repeated: this step missed only the latency objective and was run
	// again at the same rate; the repeat's verdict stands (a single
	// latency spike on a shared machine does not make a knee, an overload
	// repeats). Repeated steps are listed but take no part in the knee.
	Repeated bool `json:"repeated,omitempty"`
	// ClientCPUUsPerOp is this process's CPU per operation;
	// ServerCPUUsPerOpPerNode the server processes' (0: unknown).
	ClientCPUUsPerOp        float64          `json:"client_cpu_us_per_op"`
	ServerCPUUsPerOpPerNode float64          `json:"server_cpu_us_per_op_per_node,omitempty"`
	Errors                  map[string]int64 `json:"errors,omitempty"`
	NodeErrors              map[string]int64 `json:"node_errors,omitempty"`
	Interrupted             bool             `json:"interrupted,omitempty"`

	hist *hdr.Histogram
}

// SweepStrategy is one strategy's sweep.
type SweepStrategy struct {
	Name string `json:"name"`
	// ProbeOpsPerSec is the closed-loop rate the steps were spaced up to
	// (0 with -rates).
	ProbeOpsPerSec float64 `json:"probe_ops_per_sec,omitempty"`
	// SLO is the objective applied: -slo, or the automatic one derived from
	// the lightest step.
	SLO         string       `json:"slo"`
	SLOPct      float64      `json:"slo_percentile"`
	SLOBudgetUs float64      `json:"slo_budget_us"`
	Steps       []*SweepStep `json:"steps"`
	// Knee is the highest-rate step that held with every lighter step
	// holding too (nil: none held); KneeRate its target rate.
	Knee     *SweepStep `json:"knee,omitempty"`
	KneeRate float64    `json:"knee_rate"`
	// Saturated: the sweep reached a step past capacity (else the capacity
	// is above the highest rate tried).
	Saturated bool `json:"reached_saturation"`
	// Bound names what most likely limited the knee.
	Bound       string `json:"bound,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// SweepReport is a sweep's outcome (sweep.json).
type SweepReport struct {
	Strategies  []*SweepStrategy `json:"strategies"`
	Config      ReportConfig     `json:"config"`
	Env         Env              `json:"env"`
	Interrupted bool             `json:"interrupted,omitempty"`

	hlog []byte
}

// stepOK decides whether a measured step holds the objective.
func (st *SweepStep) judge(slo SLO) {
	st.SLOUs = us(ValueAtPercentile(st.hist, slo.P))
	budget := float64(slo.Max) / 1e3
	switch {
	case st.Ops == 0:
		st.Why = "no operation completed"
	case st.Saturated:
		st.Why = "saturated: " + st.Saturation
	case st.FailedShare > SweepMaxFailedShare:
		st.Why = fmt.Sprintf("%.1f%% of operations failed (over %g%%)", 100*st.FailedShare, 100*SweepMaxFailedShare)
	case st.SLOUs > budget:
		st.Why = fmt.Sprintf("%s %s over %s", pctName(slo.P), fmtUs(st.SLOUs), fmtUs(budget))
	default:
		st.Held = true
		st.Why = ""
		return
	}
	st.Held = false
}

// sweepStepFrom summarizes one measured step.
func sweepStepFrom(res *StrategyResult, rate float64, pcts []float64) *SweepStep {
	all := NewHistogram()
	for _, i := range []int{mAcquireRelease, mNotAcquired, mFailed} {
		all.Merge(res.hists[i])
	}
	// An operation whose release failed after it acquired is in failed;
	// an acquired one still releasing when the step ended is in neither.
	st := &SweepStep{
		TargetRate: rate, OpsPerSec: res.OpsPerSec, Ops: res.Ops, DurationS: res.DurationS,
		Saturated: res.Saturated, Saturation: res.Saturation, Failed: res.Failed, FailedShare: res.FailedShare(),
		Latency: Summarize(all, pcts...), ClientCPUUsPerOp: res.CPUUsPerOp, Interrupted: res.Interrupted,
		hist: all,
	}
	if len(res.Errors) > 0 {
		st.Errors = res.Errors
	}
	if len(res.NodeErrors) > 0 {
		st.NodeErrors = res.NodeErrors
	}
	if res.Server != nil {
		st.ServerCPUUsPerOpPerNode = res.Server.CPUUsPerOpPerNode
	}
	return st
}

// kneeOf sets the knee: the highest-rate step that held, every lighter
// step holding too.
func (ss *SweepStrategy) kneeOf() {
	sort.SliceStable(ss.Steps, func(i, j int) bool { return ss.Steps[i].TargetRate < ss.Steps[j].TargetRate })
	ss.Knee, ss.KneeRate, ss.Saturated = nil, 0, false
	for _, st := range ss.Steps {
		if st.Repeated {
			continue
		}
		if !st.Held {
			ss.Saturated = true
			break
		}
		ss.Knee, ss.KneeRate = st, st.TargetRate
	}
}

// firstFailAbove is the lightest step above the knee that did not hold
// (nil if none).
func (ss *SweepStrategy) firstFailAbove() *SweepStep {
	for _, st := range ss.Steps {
		if !st.Held && !st.Repeated && st.TargetRate > ss.KneeRate {
			return st
		}
	}
	return nil
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

// RunSweep runs a capacity sweep: per strategy, open-loop steps of rising
// rate (each warmed up at its own rate, then measured for -step), stopping
// at the first saturated step or after two steps in a row that do not
// hold (a probed sweep whose steps all hold goes on at the same spacing, up
// to SweepMaxProbeMultiple times the probe's rate), then bisection steps between the last that held and the first that
// did not. Interrupted (ctx), it returns what was measured with
// ErrInterrupted.
func RunSweep(ctx context.Context, cfg *Config, o Options) (*SweepReport, error) {
	o.discardUnset()
	sess, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer sess.t.close()
	rep := &SweepReport{Config: sess.config, Env: sess.env}
	rep.Config.Loop = "open"
	rep.Config.DurationS = cfg.Step.Seconds()

	var hbuf bytes.Buffer
	hw := NewHlogWriter(&hbuf, time.Now(), "redmux-bench sweep interval log; values in nanoseconds; tags <strategy>.probe.<metric> and <strategy>.r<rate>.<metric>", cfg.Command)
	var prefix [6]byte
	_, _ = rand.Read(prefix[:])
	keyPrefix := "redmux-bench:" + hex.EncodeToString(prefix[:]) + ":"
	say := func(format string, a ...any) {
		if !cfg.Quiet {
			fmt.Fprintf(o.Stderr, "redmux-bench sweep: "+format+"\n", a...)
		}
	}

	for i, name := range cfg.Strategies {
		if ctx.Err() != nil {
			break
		}
		if i == 0 && !cfg.StartAt.IsZero() {
			// Several sweeps started together begin together; later steps
			// drift apart (steps repeat and stop where each machine's
			// target saturates).
			say("waiting for -start-at %s", cfg.StartAt.UTC().Format(time.RFC3339))
			t := time.NewTimer(time.Until(cfg.StartAt))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			if ctx.Err() != nil {
				break
			}
		}
		ss, err := sweepStrategy(ctx, cfg, sess, name, keyPrefix, hw, say)
		if ss != nil && len(ss.Steps) > 0 {
			rep.Strategies = append(rep.Strategies, ss)
		}
		if err != nil && ctx.Err() == nil {
			return nil, redactErr(err, cfg.secrets()...)
		}
	}
	rep.Interrupted = ctx.Err() != nil
	if len(rep.Strategies) == 0 {
		if rep.Interrupted {
			return nil, fmt.Errorf("%w before any step was measured; nothing written", ErrInterrupted)
		}
		return nil, errors.New("no strategy could run")
	}
	rep.hlog = hbuf.Bytes()
	rep.Env.LoadAvgEnd = loadAvg()
	tableOut := o.Stdout
	if cfg.JSON == "-" || cfg.CSV == "-" {
		tableOut = o.Stderr
	}
	if !cfg.Quiet {
		WriteSweepTable(tableOut, rep)
	}
	if err := writeSweepOutputs(cfg, rep, o.Stdout); err != nil {
		return rep, redactErr(err, cfg.secrets()...)
	}
	if rep.Interrupted {
		return rep, fmt.Errorf("%w: the sweep report covers the steps measured", ErrInterrupted)
	}
	return rep, nil
}

func sweepStrategy(ctx context.Context, cfg *Config, sess *session, name, keyPrefix string, hw *HlogWriter, say func(string, ...any)) (*SweepStrategy, error) {
	s, err := newStrategy(name, sess.t.addrs, sess.params, cfg.Conns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer s.Close()
	workers, err := newWorkers(ctx, s, cfg.Workers)
	defer closeWorkers(workers)
	if err != nil {
		return nil, err
	}
	ss := &SweepStrategy{Name: name}
	base := RunConfig{
		Workers: cfg.Workers, Duration: cfg.Step, Warmup: cfg.Warmup, Keys: cfg.Keys,
		Workload: cfg.Workload, Hold: cfg.Hold, KeyDist: cfg.KeyDist, Prefix: keyPrefix, Percentiles: cfg.Percentiles,
	}
	rates := cfg.Rates
	if len(rates) == 0 {
		pc := base
		pc.Tag = name + ".probe"
		res, err := measure(ctx, s, workers, pc, hw, nil)
		if err != nil {
			return ss, err
		}
		if res.Ops == 0 || res.FailedShare() > 0.5 {
			return ss, fmt.Errorf("%s: the closed-loop probe failed (%d of %d operations failed: %s)", name, res.Failed, res.Ops, errString(res.Errors))
		}
		ss.ProbeOpsPerSec = res.OpsPerSec
		rates = sweepRates(res.OpsPerSec, cfg.Steps)
		say("%s: closed-loop probe %s ops/s with %d workers; steps %s", name, fmtCount(res.OpsPerSec), cfg.Workers, rateList{&rates}.String())
	}

	var slo SLO
	if cfg.SLO != nil {
		slo = *cfg.SLO
	}
	step1 := func(rate float64, refine bool) (*SweepStep, error) {
		rc := base
		rc.Rate, rc.WarmupRate = rate, rate
		rc.Tag = name + ".r" + strconv.FormatFloat(rate, 'f', -1, 64)
		var before, after serverSnap
		rc.BeforeMeasure = func() { before = serverSnapshot(ctx, sess.t, sess.opt) }
		rc.AfterMeasure = func() { after = serverSnapshot(context.WithoutCancel(ctx), sess.t, sess.opt) }
		res, err := measure(ctx, s, workers, rc, hw, nil)
		if res == nil {
			return nil, err
		}
		res.Server = serverCost(before, after, res.Ops, len(sess.t.addrs))
		st := sweepStepFrom(res, rate, cfg.Percentiles)
		st.Refinement = refine
		if cfg.SLO == nil && len(ss.Steps) == 0 {
			// The automatic objective: the lightest step's p99, times
			// SweepAutoFactor, at least SweepAutoMinSlack above it.
			p99 := time.Duration(ValueAtPercentile(st.hist, 99))
			slo = SLO{P: 99, Max: max(time.Duration(SweepAutoFactor*float64(p99)), p99+SweepAutoMinSlack).Round(10 * time.Microsecond)}
		}
		st.judge(slo)
		ss.Steps = append(ss.Steps, st)
		verdict := "held"
		if !st.Held {
			verdict = "did not hold: " + st.Why
		}
		say("%s: target %s ops/s, achieved %s, %s %s, failed %.2f%%: %s", name, fmtCount(rate), fmtCount(st.OpsPerSec),
			pctName(slo.P), fmtUs(st.SLOUs), 100*st.FailedShare, verdict)
		if !st.Held && ctx.Err() == nil {
			// Let queues left by an overloaded step drain before the next.
			cool := time.NewTimer(max(time.Second, cfg.Step/2))
			select {
			case <-cool.C:
			case <-ctx.Done():
				cool.Stop()
			}
		}
		return st, err
	}
	// step runs a rate, and once more when it missed only the latency
	// objective (see SweepStep.Repeated).
	step := func(rate float64, refine bool) (*SweepStep, error) {
		st, err := step1(rate, refine)
		if st == nil || err != nil || st.Held || st.Saturated || st.FailedShare > SweepMaxFailedShare || st.Ops == 0 {
			return st, err
		}
		st.Repeated = true
		return step1(rate, refine)
	}
	fails := 0
	for i := 0; i < len(rates); i++ {
		r := rates[i]
		st, err := step(r, false)
		if st == nil || err != nil {
			ss.finish(slo, cfg)
			ss.Interrupted = ctx.Err() != nil
			return ss, err
		}
		if st.Held {
			fails = 0
			if i == len(rates)-1 && ss.ProbeOpsPerSec > 0 && r < SweepMaxProbeMultiple*ss.ProbeOpsPerSec {
				// The probe read low (a closed loop of -c workers need not
				// reach capacity): go on at the same spacing.
				rates = append(rates, roundRate(r+ss.ProbeOpsPerSec/float64(cfg.Steps)))
			}
			continue
		}
		fails++
		if st.Saturated || fails >= 2 {
			break
		}
	}
	ss.kneeOf()
	for k := 0; k < cfg.Refine && ss.Knee != nil; k++ {
		hi := ss.firstFailAbove()
		if hi == nil {
			break
		}
		mid := roundRate((ss.KneeRate + hi.TargetRate) / 2)
		if mid <= ss.KneeRate || mid >= hi.TargetRate {
			break
		}
		st, err := step(mid, true)
		if st == nil || err != nil {
			ss.finish(slo, cfg)
			ss.Interrupted = ctx.Err() != nil
			return ss, err
		}
		ss.kneeOf()
	}
	ss.finish(slo, cfg)
	return ss, nil
}

// finish records the objective, the knee and what bound it.
func (ss *SweepStrategy) finish(slo SLO, cfg *Config) {
	ss.SLO = slo.String()
	if cfg.SLO == nil {
		ss.SLO += fmt.Sprintf(" (automatic: %gx the lightest step's p99, at least +%v)", SweepAutoFactor, SweepAutoMinSlack)
	}
	ss.SLOPct, ss.SLOBudgetUs = slo.P, float64(slo.Max)/1e3
	ss.kneeOf()
	ss.Bound = ss.bound(cfg)
}

// bound names what most likely limited the knee, from the CPU and
// concurrency figures of the knee and the first step past it.
func (ss *SweepStrategy) bound(cfg *Config) string {
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
	client := ss.KneeRate * k.ClientCPUUsPerOp / 1e6
	inFlight := 0.0
	if f := ss.firstFailAbove(); f != nil {
		inFlight = f.TargetRate * f.Latency.MeanUs / 1e6
	}
	local := len(cfg.Nodes) == 0
	switch {
	case cfg.NodeCap > 0:
		return fmt.Sprintf("the planted node cap (-node-cap %g commands/s, %g lock ops/s)", cfg.NodeCap, cfg.NodeCap/2)
	case server >= 0.8:
		return fmt.Sprintf("a node's core: %.2f cores per node at the knee (Redis runs commands on one core)", server)
	case client >= 0.8*float64(numCPU()):
		return fmt.Sprintf("the client's CPU: %.2f of %d cores at the knee", client, numCPU())
	case local && server > 0 && client+server*float64(nodes) >= 0.7*float64(numCPU()):
		return fmt.Sprintf("this machine's CPU: client %.2f + servers %.2f cores of %d at the knee (they share it)", client, server*float64(nodes), numCPU())
	case inFlight >= 0.8*float64(cfg.Workers):
		return fmt.Sprintf("the workers: %.0f operations in flight needed past the knee, -c %d (raise -c)", inFlight, cfg.Workers)
	}
	return "not CPU nor workers by these figures: the latency objective itself"
}
