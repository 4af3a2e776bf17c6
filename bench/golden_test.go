package bench

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redmux/redmux/bench/internal/plot"
	"github.com/redmux/redmux/bench/internal/report"
	"github.com/redmux/redmux/bench/load"
	"github.com/stretchr/testify/require"
)

// updateGolden rewrites testdata/golden from the writers (go test -run
// TestGoldenOutputs ./bench -update-golden); review the diff before
// committing it.
var updateGolden = flag.Bool("update-golden", false, "rewrite bench/testdata/golden")

func lat(count int64, base float64) report.Latency {
	if count == 0 {
		return report.Latency{}
	}
	return report.Latency{Count: count, MinUs: base * 0.4, MeanUs: base * 1.1, P50Us: base, P90Us: base * 1.7, P99Us: base * 3.25,
		P999Us: base * 7.5, P9999Us: base * 12.125, MaxUs: base * 40.5}
}

func goldenEnv() report.Env {
	return report.Env{Time: "2026-11-27T00:00:00Z", GoVersion: "go1.24.0", OS: "linux", Arch: "amd64", CPU: "Test CPU @ 2.0GHz", NumCPU: 2, GOMAXPROCS: 2,
		Revision: "0123456789ab", Build: report.Build{Version: "redmux-bench v0.0.0 (0123456789ab)", Module: "(devel)", Revision: "0123456789abcdef0123456789abcdef01234567",
			RevisionTime: "2026-11-26T12:00:00Z", RevisionSource: "build info"},
		Server: "fake", ServerCPU: "process", LoadAvgStart: "1.50", LoadAvgEnd: "2.25"}
}

// goldenRuns are runs that exercise every column of the run's table, CSV
// and JSON: closed loop with the default percentiles, and open loop,
// contended, with chosen percentiles, a saturated and an interrupted
// strategy.
func goldenRuns() map[string]*report.Report {
	closed := &report.Report{Config: report.ReportConfig{Title: "closed", Command: "redmux-bench -out x", Target: "embedded fake cluster, 3 nodes", TargetKind: "embedded",
		Nodes: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, Strategies: []string{"seq", "fanout", "mux"}, Workers: 16, DurationS: 5, WarmupS: 0.5,
		Keys: 16, TTLMs: 10000, TimeoutMs: 50, Loop: "closed", Workload: load.WorkloadAcquireRelease, KeysDist: load.KeysRoundRobin, DriftFactor: 0.01, DriftMs: 2},
		Env: goldenEnv()}
	for i, name := range []string{"seq", "fanout", "mux"} {
		f := float64(i + 1)
		s := &report.StrategyResult{Name: name, Ops: 50000 * int64(i+1), OpsPerSec: 10000.5 * f, DurationS: 5.001,
			Acquire: lat(50000*int64(i+1)-3, 300/f), Release: lat(50000*int64(i+1)-3, 150/f), AcquireRelease: lat(50000*int64(i+1)-3, 480/f),
			FailedLat: lat(int64(3*i), 50000), Errors: map[string]int64{}, NodeErrors: map[string]int64{},
			Acquired: 50000*int64(i+1) - 3, AcquiredPerSec: 9999.25 * f, AllocsPerOp: 20.0 / f, BytesPerOp: 1234.5 / f,
			CPUUsPerOp: 90.125 / f, HarnessCPUUsPerOp: 1.5, ProcessCPUUsPerOp: 91.625 / f, WorkerBusyShare: 0.99, MeanServiceUs: 530 / f}
		s.Failed = int64(3 * i)
		if i > 0 {
			s.Errors["no_quorum"] = int64(3 * i)
			s.NodeErrors["timeout"] = int64(7 * i)
			s.ReleaseFailed = 1
			s.AcquiredReleased = s.Acquired - 1
		}
		if name == "mux" {
			s.Server = &report.ServerCost{SetUsecPerCall: 1.25, EvalshaUsecPerCall: 2.5, SetCalls: 450000, EvalshaCalls: 450000, NodesReporting: 3,
				CPUUsPerOpPerNode: 7.9, MaxNodeCPUUsPerOp: 8.4, CPUSource: "process"}
		}
		closed.Strategies = append(closed.Strategies, s)
	}
	open := &report.Report{Config: report.ReportConfig{Command: "redmux-bench -rate 2000 -workload contended -keys 1 -percentiles 50,99.5,100", Target: "3 Redis masters given with -nodes",
		TargetKind: "nodes", Nodes: []string{"a:6379", "b:6379", "c:6379"}, Strategies: []string{"fanout", "mux"}, Workers: 8, DurationS: 2, WarmupS: 0.5,
		Keys: 1, TTLMs: 10000, TimeoutMs: 50, Rate: 2000, Loop: "open", Workload: load.WorkloadContended, KeysDist: load.KeysRoundRobin, Hold: "1ms", HoldMeanMs: 1,
		DriftFactor: 0.01, DriftMs: 2, Percentiles: []float64{50, 99.5, 100}, PasswordSet: true}, Env: goldenEnv(), Interrupted: true}
	for i, name := range []string{"fanout", "mux"} {
		f := float64(i + 1)
		pl := func(l report.Latency) report.Latency {
			if l.Count > 0 {
				l.Percentiles = []report.Percentile{{P: 50, Us: l.P50Us}, {P: 99.5, Us: l.P99Us * 1.1}, {P: 100, Us: l.MaxUs}}
			}
			return l
		}
		s := &report.StrategyResult{Name: name, Ops: 4000, OpsPerSec: 1999.75 / f, DurationS: 2, TargetRate: 2000,
			Acquire: pl(lat(1500, 700*f)), Release: pl(lat(1500, 200)), AcquireRelease: pl(lat(1500, 2100*f)),
			NotAcquiredLat: pl(lat(2500, 650)), Errors: map[string]int64{}, NodeErrors: map[string]int64{},
			Acquired: 1500, AcquiredPerSec: 750.5 / f, NotAcquired: 2500, AcquiredReleased: 1500, AllocsPerOp: 0, BytesPerOp: 0,
			CPUUsPerOp: 40, HarnessCPUUsPerOp: 2, ProcessCPUUsPerOp: 42, WorkerBusyShare: 0.5, MeanServiceUs: 2000}
		if name == "fanout" {
			s.Saturated, s.Saturation, s.Backlog = true, "achieved 1,999 of the 2,000 ops/s target", 12
		} else {
			s.Interrupted = true
		}
		open.Strategies = append(open.Strategies, s)
	}
	return map[string]*report.Report{"run-closed": closed, "run-open": open}
}

// goldenSweep is a sweep of two strategies: seq with a failed light step
// set aside and a saturated end, mux not reaching saturation.
func goldenSweep() *report.SweepReport {
	rep := &report.SweepReport{SLO: "p99<5ms", SLOSource: "-slo", Config: report.ReportConfig{Title: "sweep", Command: "redmux-bench sweep -slo p99<5ms", Target: "embedded fake cluster, 3 nodes",
		TargetKind: "embedded", Nodes: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, Strategies: []string{"seq", "mux"}, Workers: 64, DurationS: 2, WarmupS: 0.5,
		Keys: 64, TTLMs: 10000, TimeoutMs: 50, Loop: "open", Workload: load.WorkloadAcquireRelease, KeysDist: load.KeysRoundRobin, DriftFactor: 0.01, DriftMs: 2,
		CapacityRate: 50000}, Env: goldenEnv()}
	step := func(rate, achieved float64, p99 float64, held bool) *report.SweepStep {
		return &report.SweepStep{TargetRate: rate, OpsPerSec: achieved, Ops: int64(achieved * 2), DurationS: 2, Latency: lat(int64(achieved*2), p99/3.25), SLOUs: p99, Held: held,
			ClientCPUUsPerOp: 50, ServerCPUUsPerOpPerNode: 9.5, ServerCPUMaxNodeUsPerOp: 10.25, ServerCPUSource: "process", WorkerBusyShare: 0.25, MeanServiceUs: 800,
			Tag: "x.r" + time.Duration(rate).String(), LoadAvg: 1.5, MachineBusyCores: 1.2, OtherCores: 0.1}
	}
	seq := &report.SweepStrategy{Name: "seq", SLO: "p99<5ms", SLOPct: 99, SLOBudgetUs: 5000, ProbeOpsPerSec: 3000, ProbeWorkerBusy: 0.98}
	failed := step(500, 480, 9000, false)
	failed.Failed, failed.FailedShare, failed.Why, failed.Errors = 20, 0.0208, "2.08% of operations failed", map[string]int64{"no_quorum": 20}
	sat := step(2500, 2100, 90000, false)
	sat.Saturated, sat.Saturation, sat.Why = true, "achieved 2,100 of the 2,500 ops/s target (84%)", "saturated"
	seq.Steps = []*report.SweepStep{failed, step(1000, 1000, 3000, true), step(2000, 1999, 4500, true), sat}
	seq.Steps[1].Refinement = true
	seq.FindKnee()
	seq.Bound = "the latency objective itself"
	seq.ClientCPUFit = &report.CostFit{FixedCores: 0.05, UsPerOp: 45.5, Steps: 2, MinRate: 1000, MaxRate: 1999}
	mux := &report.SweepStrategy{Name: "mux", SLO: "p99<5ms", SLOPct: 99, SLOBudgetUs: 5000, ProbeOpsPerSec: 20000, ProbeWorkerBusy: 0.5}
	rerun := step(10000, 9000, 7000, false)
	rerun.Repeated, rerun.Why = true, "p99 7.00ms over 5.00ms"
	mux.Steps = []*report.SweepStep{step(5000, 5000, 1000, true), rerun, step(10000, 10000, 1500, true), step(20000, 19990, 2500, true)}
	mux.FindKnee()
	mux.ClientCPUFit = &report.CostFit{FixedCores: 0.1, UsPerOp: 12.25, Steps: 3, MinRate: 5000, MaxRate: 19990}
	mux.ServerCPUFit = &report.CostFit{FixedCores: 0.01, UsPerOp: 3.5, Steps: 3, MinRate: 5000, MaxRate: 19990}
	rep.Strategies = []*report.SweepStrategy{seq, mux}
	return rep
}

// goldenMerge is a merge of two files' tags.
func goldenMerge() (*report.MergeResult, []*mergeConfig) {
	r := &report.MergeResult{Files: []string{"a.hlog", "b.hlog"}, Intervals: 8, Skipped: 2, Filters: "-start 1s", Start: "2026-11-27T00:00:00Z", End: "2026-11-27T00:00:10Z"}
	for i, tag := range []string{"mux.acquire", "seq.acquire"} {
		h := load.NewHistogram()
		for k := 1; k <= 1000; k++ {
			load.Record(h, time.Duration(k*(i+1))*time.Microsecond)
		}
		m := &report.MergedTag{Tag: tag, Intervals: 4, Files: 2, Start: r.Start, End: r.End, PerSec: 100, SumPerSec: 100.5, Latency: report.Summarize(h), Hist: h}
		r.Tags = append(r.Tags, m)
	}
	return r, []*mergeConfig{{}, {Percentiles: []float64{50, 99.5}}}
}

// goldenHists fills every metric of a strategy's histograms with n
// values, deterministically, from about base microseconds to a tail some
// hundred times longer (failed and not acquired only when given).
func goldenHists(n int, base float64, notAcquired, failed int) load.Hists {
	h := load.NewHists()
	fill := func(m, n int, base float64) {
		for k := 1; k <= n; k++ {
			x := float64(k) / float64(n)
			load.Record(h[m], time.Duration(base*(1+300*math.Pow(x, 12))*float64(time.Microsecond)))
		}
	}
	fill(load.MAcquire, n, base)
	fill(load.MRelease, n, base/2)
	fill(load.MAcquireRelease, n, base*1.6)
	fill(load.MNotAcquired, notAcquired, base*0.9)
	fill(load.MFailed, failed, base*40)
	return h
}

// goldenPlotRuns are goldenRuns with histograms to draw: the closed run's
// three strategies, and the open run's with refused and failed operations,
// a saturated strategy, faults and reply latency (a subtitle broken in two).
func goldenPlotRuns() map[string]*report.Report {
	runs := goldenRuns()
	for i, s := range runs["run-closed"].Strategies {
		s.Hists = goldenHists(20000*(i+1), 300/float64(i+1), 0, 0)
	}
	open := *runs["run-open"]
	open.Config.Faults = []string{"latency:node=1,ms=2", "blackhole:node=2"}
	open.Config.LatencyMs = 0.5
	for i, s := range open.Strategies {
		s.Hists = goldenHists(1500, 700*float64(i+1), 2500, 3*(i+1))
	}
	runs["run-open"] = &open
	return runs
}

// goldenSweepMixed is goldenSweep with an objective per strategy, a third
// strategy (a spare colour) that held no step and has one with no
// operations, an interrupted sweep, reply latency and a node cap.
func goldenSweepMixed() *report.SweepReport {
	rep := goldenSweep()
	rep.Interrupted = true
	rep.Config.LatencyMs, rep.Config.NodeCap = 1, 20000
	rep.Strategies[1].SLOPct, rep.Strategies[1].SLOBudgetUs = 99.9, 8000
	other := &report.SweepStrategy{Name: "other", SLO: "p99<5ms", SLOPct: 99, SLOBudgetUs: 5000, Steps: []*report.SweepStep{
		{TargetRate: 400, OpsPerSec: 390, Ops: 780, SLOUs: 6000, Latency: report.Latency{P50Us: 900}},
		{TargetRate: 800, Interrupted: true},
	}}
	other.FindKnee()
	rep.Strategies = append(rep.Strategies, other)
	return rep
}

// goldenPlotMany draws more series than the legend's spacing fits (it
// packs tighter), spare colours, a warning and an empty series.
func goldenPlotMany(w io.Writer) error {
	var series []plot.Series
	for i := range 11 {
		h := load.NewHistogram()
		for k := 1; k <= 200*(i+1); k++ {
			load.Record(h, time.Duration(k*(i+1))*time.Microsecond)
		}
		s := plot.Series{Name: fmt.Sprintf("tag-%d.acquire <&>", i), Hist: h}
		switch i {
		case 0:
			s.Name = "mux"
		case 3:
			s.Warn = "SATURATED (behind -rate)"
		case 5:
			s.Dash = "2,3"
		case 10:
			s.Hist = load.NewHistogram()
		}
		series = append(series, s)
	}
	return plot.WritePercentiles(w, "Many series", "one subtitle line", series)
}

// The writers' table, CSV, JSON, Markdown and SVG outputs stay byte for
// byte what they were: the column lists are one model rendered several
// ways, and a refactoring must not move a cell or a point of a plot.
func TestGoldenOutputs(t *testing.T) {
	outs := map[string]func(*bytes.Buffer) error{}
	for name, rep := range goldenRuns() {
		outs[name+".table.txt"] = func(b *bytes.Buffer) error { report.WriteTable(b, rep); return nil }
		outs[name+".csv"] = func(b *bytes.Buffer) error { return report.WriteCSV(b, rep) }
		outs[name+".json"] = func(b *bytes.Buffer) error { return report.WriteJSON(b, rep) }
		outs[name+".md"] = func(b *bytes.Buffer) error { return report.WriteMarkdown(b, rep) }
	}
	sw := goldenSweep()
	outs["sweep.table.txt"] = func(b *bytes.Buffer) error { report.WriteSweepTable(b, sw); return nil }
	outs["sweep.csv"] = func(b *bytes.Buffer) error { return report.WriteSweepCSV(b, sw) }
	outs["sweep.json"] = func(b *bytes.Buffer) error { return report.WriteSweepJSON(b, sw) }
	outs["sweep.md"] = func(b *bytes.Buffer) error { return report.WriteSweepMarkdown(b, sw) }
	mr, mcs := goldenMerge()
	for i, mc := range mcs {
		n := []string{"merge-default", "merge-pcts"}[i]
		outs[n+".table.txt"] = func(b *bytes.Buffer) error { report.WriteMergedTable(b, mr, mergePercentiles(mc)); return nil }
		outs[n+".csv"] = func(b *bytes.Buffer) error { return report.WriteMergedCSV(b, mr, mergePercentiles(mc)) }
	}
	for name, rep := range goldenPlotRuns() {
		outs[name+".percentiles.svg"] = func(b *bytes.Buffer) error { return report.WritePlot(b, rep, load.MetricAcquireRelease) }
		outs[name+".percentiles-acquire.svg"] = func(b *bytes.Buffer) error { return report.WritePlot(b, rep, load.MetricAcquire) }
	}
	outs["sweep.svg"] = func(b *bytes.Buffer) error { return report.WriteSweepPlot(b, sw) }
	swm := goldenSweepMixed()
	outs["sweep-mixed.svg"] = func(b *bytes.Buffer) error { return report.WriteSweepPlot(b, swm) }
	outs["merge-default.svg"] = func(b *bytes.Buffer) error { return report.WriteMergedPlot(b, mr, mcs[0].Title, len(mcs[0].Tags) > 0) }
	outs["plot-many.svg"] = func(b *bytes.Buffer) error { return goldenPlotMany(b) }
	for name, write := range outs {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, write(&b))
			path := filepath.Join("testdata", "golden", name)
			if *updateGolden {
				require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), b.String())
		})
	}
}
